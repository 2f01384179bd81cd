package htmlreport_test

// The end-to-end test opens reports in headless Chromium and drives them as
// a person would. It talks to the browser over the DevTools protocol
// (chromedp), rather than scraping --dump-dom output and --enable-logging
// stderr, because the protocol reports console messages and uncaught
// exceptions as typed events, can evaluate the laid-out page (where every
// mark and label ended up), can click and press keys, and waits on the
// browser's own load and command replies instead of on the clock.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"go.uber.org/goleak"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/htmlreport"
	"github.com/crux-sim/crux-sim/scenarios"
)

// chromium finds the browser, or skips: a bare machine runs every other
// test, unless CRUX_SIM_REQUIRE_CHROMIUM=1 (CI sets it) makes a missing
// browser a failure. CRUX_SIM_CHROMIUM names another binary.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CRUX_SIM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "chromium is not installed, so the report is not opened in a browser"
	if os.Getenv("CRUX_SIM_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(why + ", and CRUX_SIM_REQUIRE_CHROMIUM=1 requires the browser test to run")
	}
	t.Skip(why + "; install Debian's chromium package (apt-get install -y chromium), as .ci/run does, to run this test")
	return ""
}

// layout is what the page reports about where things ended up.
type layout struct {
	Lanes       int      `json:"lanes"`
	Labels      int      `json:"labels"`
	Misaligned  []string `json:"misaligned"`
	Overlaps    []string `json:"overlaps"`
	Clipped     []string `json:"clipped"`
	ScrollsX    bool     `json:"scrollsX"`
	ColumnWidth float64  `json:"columnWidth"`
	Resources   []string `json:"resources"`
	Marks       int      `json:"marks"`
	Hidden      []string `json:"hidden"`
	// Cut are lane titles and subtitles cut short (an ellipsis).
	Cut []string `json:"cut"`
	// Scrollbar is the height of the timeline's horizontal scrollbar.
	Scrollbar float64 `json:"scrollbar"`
	// Noted: the note that the timeline scrolls sideways is shown.
	Noted bool `json:"noted"`
	// Fine are durations shown finer than a millisecond.
	Fine []string `json:"fine"`
	// LastReachable: scrolled to its end, the last column is in view.
	LastReachable bool `json:"lastReachable"`
	// Debug is the widths that decide whether the timeline scrolls.
	Debug string `json:"debug"`
}

// measure runs in the page: lanes aligned with their labels, no two marks
// (or axis labels, or a label and its state pill) overlapping, bar labels
// inside their bars, every mark inside the timeline, and nothing loaded.
const measure = `(() => {
  const box = (el) => el.getBoundingClientRect();
  const hits = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const visible = (el) => getComputedStyle(el).visibility !== "hidden" && el.offsetParent !== null;
  const out = {misaligned: [], overlaps: [], clipped: [], hidden: []};
  const lanes = [...document.querySelectorAll(".tracks .lane")];
  const labels = [...document.querySelectorAll(".labels .lane-label")];
  out.lanes = lanes.length; out.labels = labels.length;
  lanes.forEach((l, i) => {
    const a = box(l), b = labels[i] && box(labels[i]);
    if (!b || Math.abs(a.top - b.top) > 1 || Math.abs(a.height - b.height) > 1) out.misaligned.push(l.dataset.lane);
    const ms = [...l.querySelectorAll(".mark")];
    for (let i = 0; i < ms.length; i++) for (let j = i + 1; j < ms.length; j++)
      if (hits(box(ms[i]), box(ms[j]))) out.overlaps.push("marks " + ms[i].dataset.entry + " and " + ms[j].dataset.entry);
  });
  labels.forEach((l) => {
    const pill = l.querySelector(".pill"), title = l.querySelector(".lt");
    if (pill && hits(box(pill), box(title))) out.overlaps.push("label and state of " + l.dataset.lane);
  });
  const axis = [...document.querySelectorAll(".axis .group span, .axis .mark, .axis .flag")].filter(visible);
  for (let i = 0; i < axis.length; i++) for (let j = i + 1; j < axis.length; j++)
    if (hits(box(axis[i]), box(axis[j]))) out.overlaps.push("axis labels " + axis[i].textContent + " and " + axis[j].textContent);
  document.querySelectorAll(".bar:not(.narrow)").forEach((b) => {
    if (box(b.firstElementChild).right > box(b).right + 0.5) out.clipped.push(b.dataset.work + " " + b.dataset.state);
  });
  const tracks = box(document.querySelector(".tracks"));
  const marks = [...document.querySelectorAll(".tracks .mark")];
  out.marks = marks.length;
  marks.forEach((m) => {
    const r = box(m);
    if (r.width === 0 || r.left < tracks.left || r.right > tracks.right || r.top < tracks.top || r.bottom > tracks.bottom) out.hidden.push(m.dataset.entry);
  });
  const sc = document.getElementById("tl-scroll");
  out.scrollsX = sc.scrollWidth > sc.clientWidth + 1;
  out.columnWidth = parseFloat(getComputedStyle(document.getElementById("timeline")).getPropertyValue("--cw"));
  out.resources = performance.getEntriesByType("resource").map((e) => e.name);
  out.cut = [...document.querySelectorAll(".lane-label .lt, .lane-label .ls")].filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.textContent);
  out.scrollbar = sc.offsetHeight - sc.clientHeight;
  const note = document.getElementById("scroll-note");
  out.noted = !!note && !note.hidden && note.offsetHeight > 0;
  out.fine = (document.querySelector(".timeline-card").innerText + document.getElementById("transcript").innerText + [...document.querySelectorAll("[data-tip]")].map((e) => e.dataset.tip).join("\n")).match(/\d\.\d{4,}s/g) || [];
  sc.scrollLeft = sc.scrollWidth;
  const ticks = [...document.querySelectorAll(".axis .tick")];
  const last = ticks.length ? box(ticks[ticks.length - 1]) : null, view = box(sc);
  out.lastReachable = !last || (last.left >= view.left - 0.5 && last.right <= view.right + 0.5);
  out.debug = "scroller " + sc.scrollWidth + "/" + sc.clientWidth + ", columns " + getComputedStyle(document.getElementById("timeline")).getPropertyValue("--cw");
  sc.scrollLeft = 0;
  return out;
})()`

// selection is what the page shows as selected.
type selection struct {
	Lines   []string `json:"lines"`
	Marks   []string `json:"marks"`
	Details []string `json:"details"`
	Detail  string   `json:"detail"`
	Cursor  bool     `json:"cursor"`
	Tip     string   `json:"tip"`
}

const selected = `(() => {
  const shown = [...document.querySelectorAll(".detail")].filter((d) => !d.hidden);
  const tip = document.getElementById("tip");
  return {
    lines: [...document.querySelectorAll(".tline.selected")].map((l) => l.dataset.entry),
    marks: [...document.querySelectorAll(".tracks .mark.selected")].map((m) => m.dataset.entry),
    details: shown.map((d) => d.id),
    detail: shown.length ? shown[0].innerText : "",
    cursor: !document.getElementById("cursor").hidden,
    tip: tip.hidden ? "" : tip.textContent,
  };
})()`

const sentinel = "crux-sim report test: done"

func TestReportRendersInChromium(t *testing.T) {
	path := chromium(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	// A deadline only so that a wedged browser fails the test instead of
	// hanging it; nothing below waits on the clock.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", false), // a timeline that scrolls must show its scrollbar
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1600, 1000),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	defer func() {
		if err := chromedp.Cancel(browser); err != nil {
			t.Errorf("close chromium: %v", err)
		}
	}()

	// clockJump clicks the first clock jump, whose detail says how far.
	clockJump := func(tr *trace.Trace) (int, []string) {
		for i, e := range tr.Entries {
			if e.Kind == trace.Clock {
				return i + 1, []string{"jumped by", jump(tr, i)}
			}
		}
		return 0, nil
	}
	cases := []struct {
		name string
		seed int64
		// swarm runs the seed's own fault mix (drawn latencies, odd times).
		swarm bool
		// width is the window's width; a long run may scroll sideways in
		// it, but then it must say so and reach its last event.
		width int64
		long  bool
		// click picks the event to click, and says what its detail must show.
		click func(tr *trace.Trace) (entry int, shows []string)
	}{
		{name: "research-coordinator", seed: 1, click: func(tr *trace.Trace) (int, []string) {
			// The second request with a status block: what the coordinator
			// saw of its running research.
			seen := 0
			for i, e := range tr.Entries {
				if e.Kind == trace.Request && len(e.Status()) > 0 {
					if seen++; seen == 2 {
						return i + 1, append([]string{"Background work:"}, e.Status()...)
					}
				}
			}
			return 0, nil
		}},
		{name: "cancel-vs-complete", seed: 3, click: func(tr *trace.Trace) (int, []string) {
			// The cancel, racing the child's completion.
			for i, e := range tr.Entries {
				if e.Kind == trace.ToolResult && e.Action == "cancel" {
					return i + 1, []string{"work action", "cancel", `"accepted": true`}
				}
			}
			return 0, nil
		}},
		// At 1,400 px: a run with clock jumps a column apart, and one too
		// long to fit, with a dozen lanes.
		{name: "delegate-stale", seed: 2, swarm: true, width: 1400, long: true, click: clockJump},
		{name: "task-dag-crash", seed: 2, swarm: true, width: 1400, long: true, click: clockJump},
		{name: "result-timeout", seed: 1, width: 1400, click: clockJump},
		// Two Work lanes, nested under their owner, with their state pills.
		{name: "queued-cancel", seed: 1, width: 1400, click: func(tr *trace.Trace) (int, []string) {
			for i, e := range tr.Entries {
				if e.Kind == trace.ToolResult && e.Action == "cancel" {
					return i + 1, []string{"work action", "cancel"}
				}
			}
			return 0, nil
		}},
	}
	for _, c := range cases {
		width := c.width
		if width == 0 {
			width = 1600
		}
		t.Run(fmt.Sprintf("%s-at-%dpx", c.name, width), func(t *testing.T) {
			sc, err := scenarios.Builtin(c.name)
			if err != nil {
				t.Fatal(err)
			}
			o := harness.Run(sc, harness.Options{Seed: c.seed, Swarm: c.swarm})
			in := htmlreport.FromOutcome(o)
			in.Command = fmt.Sprintf("crux-sim run --seed %d %s", c.seed, c.name)
			dir := t.ArtifactDir()
			file := filepath.Join(dir, c.name+".html")
			if err := htmlreport.WriteFile(file, in); err != nil {
				t.Fatal(err)
			}

			tab, closeTab := chromedp.NewContext(browser)
			defer closeTab()
			console := chromedp.Console(tab) // subscribed before the page loads
			if err := chromedp.Do(tab, chromedp.EmulateViewport(width, 1000), chromedp.Navigate("file://"+file)); err != nil {
				t.Fatalf("open the report: %v", err)
			}

			l, err := chromedp.Run(tab, chromedp.Evaluate[layout](measure))
			if err != nil {
				t.Fatalf("measure the page: %v", err)
			}
			x := expect(o.Trace)
			// The expected lanes are those of a run of top-level agents; a
			// platform run's sessions are laid out by its own rules.
			if l.Lanes != l.Labels || o.Platform == nil && l.Lanes != len(x.lanes) {
				t.Errorf("%d lanes and %d labels rendered, want %d", l.Lanes, l.Labels, len(x.lanes))
			}
			if len(l.Misaligned) > 0 {
				t.Errorf("lanes not level with their labels: %v", l.Misaligned)
			}
			if len(l.Overlaps) > 0 {
				t.Errorf("overlapping: %v", l.Overlaps)
			}
			if len(l.Clipped) > 0 {
				t.Errorf("bar labels running out of their bars: %v", l.Clipped)
			}
			if len(l.Hidden) > 0 {
				t.Errorf("marks outside the timeline or not laid out: entries %v", l.Hidden)
			}
			if l.ScrollsX && !c.long {
				t.Errorf("a %d-event timeline scrolls sideways in a %dpx window (columns %.0fpx)", len(o.Trace.Entries), width, l.ColumnWidth)
			}
			if l.ScrollsX && (!l.Noted || l.Scrollbar < 8 || !l.LastReachable) {
				t.Errorf("the timeline scrolls sideways but not obviously: note shown %v, scrollbar %.0fpx, last event reachable %v", l.Noted, l.Scrollbar, l.LastReachable)
			}
			if len(l.Cut) > 0 {
				t.Errorf("lane labels cut short: %q", l.Cut)
			}
			if len(l.Fine) > 0 {
				t.Errorf("durations shown finer than the scenario's resolution: %v", l.Fine)
			}
			if c.long {
				// Fit to width: the whole run in the card, labels still apart.
				clickFit := `(() => { const b = document.getElementById("fit-width"); if (b) b.click(); return !!b; })()`
				if ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](clickFit)); err != nil || !ok {
					t.Fatalf("the report of a timeline that scrolls has no fit-to-width button (%v)", err)
				}
				f, err := chromedp.Run(tab, chromedp.Evaluate[layout](measure))
				if err != nil {
					t.Fatal(err)
				}
				if f.ScrollsX || len(f.Cut) > 0 {
					t.Errorf("fitted to width: scrolls %v (%s), cut %q", f.ScrollsX, f.Debug, f.Cut)
				}
				for _, o := range f.Overlaps {
					if strings.HasPrefix(o, "axis") {
						t.Errorf("fitted to width, the axis labels overlap: %s", o)
					}
				}
				if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](clickFit)); err != nil {
					t.Fatal(err)
				}
			}
			if len(l.Resources) > 0 {
				t.Errorf("the page loaded %v; it must be self-contained", l.Resources)
			}

			// Click a mark: its transcript line, detail and column light up.
			entry, shows := c.click(o.Trace)
			if entry == 0 {
				t.Fatal("the trace has no event to click")
			}
			mark := fmt.Sprintf(`.tracks .mark[data-entry="%d"]`, entry)
			if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(mark))); err != nil {
				t.Fatalf("click %s: %v", mark, err)
			}
			s, err := chromedp.Run(tab, chromedp.Evaluate[selection](selected))
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprint(entry)
			if len(s.Lines) != 1 || s.Lines[0] != want || len(s.Marks) != 1 || s.Marks[0] != want || !s.Cursor {
				t.Errorf("after clicking entry %s: lines %v, marks %v selected, cursor %v", want, s.Lines, s.Marks, s.Cursor)
			}
			if len(s.Details) != 1 || s.Details[0] != "d-"+want {
				t.Errorf("after clicking entry %s the details shown are %v", want, s.Details)
			}
			for _, w := range shows {
				if !strings.Contains(s.Detail, w) {
					t.Errorf("the detail of entry %s does not show %q:\n%s", want, w, s.Detail)
				}
			}
			if first, _, _ := strings.Cut(o.Trace.EntryLine(entry-1), "\n"); !strings.Contains(s.Tip, first) {
				t.Errorf("hovering entry %s shows the tooltip %q, want its line %q", want, s.Tip, first)
			}

			// Move the pointer off the timeline: the tooltip goes, and the
			// screenshot shows the selection rather than a tooltip over it.
			if err := chromedp.Do(tab, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 4, 4)); err != nil {
				t.Fatal(err)
			}
			if s, err := chromedp.Run(tab, chromedp.Evaluate[selection](selected)); err != nil || s.Tip != "" {
				t.Errorf("the tooltip %q stays after the pointer left the timeline (%v)", s.Tip, err)
			}
			png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			shot := filepath.Join(dir, c.name+".png")
			if err := os.WriteFile(shot, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s (go test -artifacts keeps it)", shot)

			// The arrow key steps to the next event of the transcript.
			if err := chromedp.Do(tab, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
				t.Fatal(err)
			}
			s, err = chromedp.Run(tab, chromedp.Evaluate[selection](selected))
			if err != nil {
				t.Fatal(err)
			}
			next := nextShown(o.Trace, entry)
			if len(s.Lines) != 1 || s.Lines[0] != fmt.Sprint(next) {
				t.Errorf("after → from entry %d the selected lines are %v, want [%d]", entry, s.Lines, next)
			}

			// Every console message the page wrote comes before this one.
			if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`console.log("`+sentinel+`"), true`)); err != nil {
				t.Fatal(err)
			}
			for m, err := range console {
				if err != nil {
					t.Fatalf("read the console: %v", err)
				}
				if m.Text == sentinel {
					break
				}
				switch m.Type {
				case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
					t.Errorf("console %s", m)
				default:
					t.Logf("console %s", m)
				}
			}
		})
	}
}

// nextShown is the entry after entry that the transcript shows.
func nextShown(tr *trace.Trace, entry int) int {
	for i := entry; i < len(tr.Entries); i++ {
		if tr.Entries[i].Kind != trace.ToolCall {
			return i + 1
		}
	}
	return entry
}

// jump is how far the i-th entry, a clock jump, moved the clock, as its
// detail says it.
func jump(tr *trace.Trace, i int) string {
	by, _, _ := strings.Cut(strings.TrimPrefix(tr.Entries[i].Detail, "jumped "), " to ")
	return by
}
