// crux-sim report: fit the timeline to the window, link marks and transcript
// lines, show details, step through events with the arrow keys.
(function () {
  "use strict";
  var $ = function (sel, root) { return (root || document).querySelector(sel); };
  var $$ = function (sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); };

  var timeline = $("#timeline");
  var scroller = $("#tl-scroll");
  var transcript = $("#transcript");
  var cursor = $("#cursor");
  var tip = $("#tip");
  var empty = $("#detail-empty");
  if (!timeline || !scroller || !transcript) { return; }

  var cols = parseInt(timeline.getAttribute("data-cols"), 10) || 1;
  var labels = $(".labels", timeline);

  var note = $("#scroll-note");
  var fitted = false;
  var fitButton = $("#fit-width");
  if (fitButton) {
    fitButton.addEventListener("click", function () {
      fitted = !fitted;
      fitButton.textContent = fitted ? "Readable columns" : "Fit to width";
      fit();
    });
  }

  // Lane labels are as wide as their longest title needs (up to two fifths
  // of the card), so that no label is cut.
  function fitLabels() {
    timeline.style.removeProperty("--lw");
    var need = 250;
    $$(".lane-label", timeline).forEach(function (l) {
      var t = $(".lt", l), sub = $(".ls", l), pill = $(".pill", l);
      var pad = parseFloat(getComputedStyle(l).paddingLeft) + 16;
      var room = (pill ? pill.offsetWidth + 14 : 0);
      need = Math.max(need, Math.ceil(t.scrollWidth + pad + room + 8), sub ? Math.ceil(sub.scrollWidth + pad + 8) : 0);
    });
    var lw = Math.min(need, Math.max(250, Math.floor(scroller.clientWidth * 0.4)));
    timeline.style.setProperty("--lw", lw + "px");
  }

  // Columns are as wide as the window allows, within readable bounds; a
  // timeline that cannot fit scrolls, and says so, unless fitted to width.
  function fit() {
    fitLabels();
    var avail = scroller.clientWidth - labels.offsetWidth - 20;
    var cw = Math.max(20, Math.min(46, Math.floor(avail / cols)));
    if (fitted) { cw = Math.max(2, Math.min(46, avail / cols)); }
    timeline.style.setProperty("--cw", cw + "px");
    timeline.classList.toggle("dense", cw < 24);
    timeline.classList.toggle("fitted", fitted && cw < 20);
    // Fitted, marks and labels that stand out past the last column must fit
    // too: narrow the columns by what still sticks out.
    for (var i = 0; fitted && i < 4; i++) {
      var excess = timeline.scrollWidth - scroller.clientWidth;
      if (excess <= 0) { break; }
      cw = Math.max(1, cw - (excess + 2) / cols);
      timeline.style.setProperty("--cw", cw + "px");
    }
    var scrolls = timeline.scrollWidth > scroller.clientWidth + 1;
    scroller.classList.toggle("scrolls", scrolls);
    if (note) {
      note.hidden = !(scrolls || fitted);
      $("#scroll-shown").textContent = fitted ? "all of them" : "about " + Math.max(1, Math.floor(avail / cw));
    }
    // A clock-jump label that would run into the one before it shows as a
    // short mark; hover or click it for how far the clock jumped.
    var jumpRight = -Infinity;
    var end = $(".tracks", timeline).getBoundingClientRect().right;
    $$(".axis .mark.k-clock", timeline).forEach(function (m) {
      m.classList.remove("compact");
      m.style.visibility = "";
      var r = m.getBoundingClientRect();
      if (r.left < jumpRight + 3 || r.right > end) {
        m.classList.add("compact");
        r = m.getBoundingClientRect();
      }
      if (r.left < jumpRight + 1) {
        // Fitted so tight that even the short mark would touch: the jump's
        // band across the lanes still shows it.
        m.style.visibility = "hidden";
        return;
      }
      jumpRight = r.right;
    });
    // A time label that would run into the next one shows on hover only.
    var right = -Infinity;
    $$(".axis .group span", timeline).forEach(function (span) {
      span.style.visibility = "";
      var r = span.getBoundingClientRect();
      if (r.left < right + 4 || r.right > end) {
        span.style.visibility = "hidden";
        span.parentElement.setAttribute("data-tip", span.textContent);
      } else {
        right = r.right;
      }
    });
    // A state's name shows on its bar only where it fits.
    $$(".bar", timeline).forEach(function (b) {
      var label = b.firstElementChild;
      b.classList.remove("narrow");
      if (label && label.offsetWidth + 6 > b.clientWidth) { b.classList.add("narrow"); }
    });
  }
  fit();
  window.addEventListener("resize", fit);

  // Entries in transcript order: the order the arrow keys step through.
  var lines = $$(".tline", transcript);
  var order = lines.map(function (l) { return l.getAttribute("data-entry"); });
  var current = null;

  function reveal(el, box, horizontal) {
    var r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (horizontal) {
      var left = b.left + labels.offsetWidth;
      if (r.left < left || r.right > b.right) {
        box.scrollLeft += r.left - left - (b.right - left) / 3;
      }
    } else if (r.top < b.top || r.bottom > b.bottom) {
      box.scrollTop += r.top - b.top - b.height / 3;
    }
  }

  function select(entry, opts) {
    opts = opts || {};
    var line = document.getElementById("t-" + entry);
    if (!line) { return; }
    $$(".selected").forEach(function (el) { el.classList.remove("selected"); });
    $$(".tick.on").forEach(function (el) { el.classList.remove("on"); });
    current = String(entry);
    line.classList.add("selected");
    var col = line.getAttribute("data-col");
    var marks = $$('.mark[data-entry="' + current + '"]', timeline);
    marks.forEach(function (m) { m.classList.add("selected"); });
    cursor.style.setProperty("--c", col);
    cursor.hidden = false;
    var tick = $$(".tick", timeline)[+col];
    if (tick) { tick.classList.add("on"); }
    $$(".detail").forEach(function (d) { d.hidden = true; });
    var d = document.getElementById("d-" + current);
    if (d) { d.hidden = false; }
    if (empty) { empty.hidden = true; }
    if (opts.scrollLine !== false) { reveal(line, transcript, false); }
    if (opts.scrollMark !== false && marks.length) { reveal(marks[0], scroller, true); }
    try { history.replaceState(null, "", "#e" + current); } catch (e) { /* a file: URL may refuse; the selection still shows */ }
  }

  function clear() {
    $$(".selected").forEach(function (el) { el.classList.remove("selected"); });
    $$(".tick.on").forEach(function (el) { el.classList.remove("on"); });
    $$(".detail").forEach(function (d) { d.hidden = true; });
    cursor.hidden = true;
    if (empty) { empty.hidden = false; }
    current = null;
  }

  function step(by) {
    var i = current === null ? (by > 0 ? -1 : order.length) : order.indexOf(current);
    var next = Math.max(0, Math.min(order.length - 1, i + by));
    if (order.length) { select(order[next]); }
  }

  document.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-entry]") : null;
    if (!t) { return; }
    if (t.classList.contains("goto")) { ev.preventDefault(); }
    if (t.classList.contains("tline")) {
      select(t.getAttribute("data-entry"), { scrollLine: false });
    } else if (t.classList.contains("mark") || t.classList.contains("bar") || t.classList.contains("flag")) {
      select(t.getAttribute("data-entry"), { scrollMark: false });
    } else if (t.classList.contains("goto")) {
      select(t.getAttribute("data-entry"));
    }
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) { return; }
    if (ev.key === "ArrowRight" || ev.key === "j") { step(1); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft" || ev.key === "k") { step(-1); ev.preventDefault(); }
    else if (ev.key === "Escape") { clear(); }
  });

  // Hovering a transcript line points at its marks.
  transcript.addEventListener("mouseover", function (ev) {
    var l = ev.target.closest(".tline");
    $$(".mark.hover").forEach(function (m) { m.classList.remove("hover"); });
    if (l) {
      $$('.mark[data-entry="' + l.getAttribute("data-entry") + '"]', timeline).forEach(function (m) { m.classList.add("hover"); });
    }
  });
  transcript.addEventListener("mouseleave", function () {
    $$(".mark.hover").forEach(function (m) { m.classList.remove("hover"); });
  });

  // Tooltips: a mark's transcript text.
  function showTip(el) {
    var text = el.getAttribute("data-tip");
    if (!text || !tip) { return; }
    tip.textContent = text;
    tip.hidden = false;
    var r = el.getBoundingClientRect();
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = Math.min(window.innerWidth - w - 8, Math.max(8, r.left + r.width / 2 - w / 2));
    var y = r.bottom + 8;
    if (y + h > window.innerHeight - 8) { y = Math.max(8, r.top - h - 8); }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function hideTip() { if (tip) { tip.hidden = true; } }
  timeline.addEventListener("mouseover", function (ev) {
    var el = ev.target.closest("[data-tip]");
    if (el) { showTip(el); } else { hideTip(); }
  });
  timeline.addEventListener("mouseleave", hideTip);
  timeline.addEventListener("focusin", function (ev) {
    if (ev.target.hasAttribute && ev.target.hasAttribute("data-tip")) { showTip(ev.target); }
  });
  timeline.addEventListener("focusout", hideTip);
  scroller.addEventListener("scroll", hideTip);

  // A link to an event: report.html#e12.
  var m = /^#e(\d+)$/.exec(location.hash);
  if (m) { select(m[1]); }
})();
