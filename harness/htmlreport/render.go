package htmlreport

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core/trace"
)

//go:embed assets
var assets embed.FS

var (
	page = template.Must(template.ParseFS(assets, "assets/report.html.tmpl"))
	css  = template.CSS(mustRead("assets/report.css"))
	js   = template.JS(mustRead("assets/report.js"))
)

func mustRead(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ErrNoTrace is returned for an Input without a trace.
var ErrNoTrace = errors.New("htmlreport: the input has no trace")

// Write renders the report as one self-contained HTML document. The same
// input always renders the same bytes.
func Write(w io.Writer, in Input) error {
	if in.Trace == nil {
		return ErrNoTrace
	}
	var b bytes.Buffer
	if err := page.Execute(&b, build(in)); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteFile renders the report into a file, replacing it.
func WriteFile(path string, in Input) error {
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// view is what the template renders.
type view struct {
	Title, Source, Command, Seed string
	Status                       string // PASS, FAIL or NO CHECKS
	StatusClass                  string // pass, fail or none
	Summary                      string
	RootCause                    string
	Stats                        []Fact
	TL                           *timeline
	Flags                        []flag
	Problem                      map[int]bool // entries where something failed
	Details                      []detail
	Lines                        []tline
	Verdicts                     []Verdict
	Violations                   []Violation
	Findings                     []string
	States                       []string
	CSS                          template.CSS
	JS                           template.JS
}

// flag marks, on the axis, an entry where an expectation or invariant failed.
type flag struct {
	Col, Entry int
	Tip        string
}

// tline is one transcript entry.
type tline struct {
	Entry int
	Col   int
	Kind  trace.Kind
	Lines []string
	Fail  bool
}

// states in lifecycle order, for the legend.
var states = []string{"queued", "running", "cancel-requested", "completed", "failed", "cancelled"}

func build(in Input) *view {
	t := in.Trace
	tl := layout(t)
	v := &view{
		Title: in.Title, Source: in.Source, Command: in.Command,
		TL: tl, Findings: in.Findings, States: states, CSS: css, JS: js,
		RootCause: in.RootCause,
	}
	if v.Title == "" {
		v.Title = t.Name
	}
	if v.Title == "" {
		v.Title = "crux-sim run"
	}
	if t.Seed != nil {
		v.Seed = strconv.FormatInt(*t.Seed, 10)
	}

	// Problems, by column: an expectation or invariant that failed there.
	problems := map[int][]string{}
	toEntry := func(entry int) int {
		if c := tl.colOf(entry); c >= 0 {
			return tl.Cols[c].Entry
		}
		return 0
	}
	held := 0
	for _, vd := range in.Verdicts {
		if vd.Passed {
			held++
		} else if c := tl.colOf(vd.Entry); c >= 0 {
			problems[c] = append(problems[c], "FAIL "+vd.Description+": "+vd.Message)
		}
		vd.Entry = toEntry(vd.Entry)
		v.Verdicts = append(v.Verdicts, vd)
	}
	for _, vl := range in.Violations {
		if c := tl.colOf(vl.Entry); c >= 0 {
			problems[c] = append(problems[c], "invariant "+vl.Invariant+": "+vl.Message)
		}
		vl.Entry = toEntry(vl.Entry)
		v.Violations = append(v.Violations, vl)
	}
	v.Problem = map[int]bool{}
	for _, c := range tl.Cols {
		if ps := problems[c.Index]; len(ps) > 0 {
			v.Flags = append(v.Flags, flag{Col: c.Index, Entry: c.Entry, Tip: strings.Join(ps, "\n")})
			v.Problem[c.Entry] = true
		}
	}

	switch {
	case len(in.Verdicts) == 0 && len(in.Violations) == 0:
		v.Status, v.StatusClass, v.Summary = "NO CHECKS", "none", "no expectations were checked"
	case in.Passed():
		v.Status, v.StatusClass = "PASS", "pass"
	default:
		v.Status, v.StatusClass = "FAIL", "fail"
	}
	if len(in.Verdicts) > 0 {
		v.Summary = fmt.Sprintf("%d of %d expectations held", held, len(in.Verdicts))
	}
	if n := len(in.Violations); n > 0 {
		v.Summary += fmt.Sprintf(", %d invariant violation%s", n, plural(n))
	}

	for _, c := range tl.Cols {
		e := &t.Entries[c.Entry-1]
		v.Details = append(v.Details, describe(t, c.Entry, e, problems[c.Index]))
		v.Lines = append(v.Lines, tline{Entry: c.Entry, Col: c.Index, Kind: c.Kind, Lines: strings.Split(t.EntryLine(c.Entry-1), "\n"), Fail: len(problems[c.Index]) > 0})
	}

	var runs, works, requests, faults, jumps int
	for _, l := range tl.Lanes {
		switch l.Kind {
		case "run":
			runs++
		case "work":
			works++
		}
	}
	for i := range t.Entries {
		switch t.Entries[i].Kind {
		case trace.RunStart:
			if t.Entries[i].Mode() == "background" {
				runs++ // a child run shares its Work's lane
			}
		case trace.Request:
			requests++
		case trace.Fault:
			faults++
		case trace.Clock:
			jumps++
		}
	}
	v.Stats = append(v.Stats,
		Fact{"agent runs", strconv.Itoa(runs)},
		Fact{"background work", strconv.Itoa(works)},
		Fact{"requests", strconv.Itoa(requests)},
		Fact{"events", strconv.Itoa(len(tl.Cols))},
		Fact{"clock jumps", strconv.Itoa(jumps)},
		Fact{"faults", strconv.Itoa(faults)},
	)
	v.Stats = append(v.Stats, in.Facts...)
	return v
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
