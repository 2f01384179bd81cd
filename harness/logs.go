package harness

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// logInvariant names the rule that the runtime's redacted request log never
// carries child output or failure text. It is checked when
// Options.CheckLogs is set.
const logInvariant = "no-child-content-in-logs"

// logLines collects the runtime's log as plain lines, values unquoted, so
// that a check can look for child content in them as it was written.
type logLines struct {
	lines []string
}

func (l *logLines) handler() slog.Handler { return &lineHandler{log: l} }

type lineHandler struct {
	log   *logLines
	attrs []slog.Attr
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		b.WriteByte(' ')
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(a.Value.Resolve().String())
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	h.log.lines = append(h.log.lines, b.String())
	return nil
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lineHandler{log: h.log, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// checkLogs looks at the log lines written since the last step for any
// child output or failure text the run has produced so far.
func (c *checker) checkLogs() {
	logs := c.r.logs
	if logs == nil {
		return
	}
	for ; c.logSeen < len(logs.lines); c.logSeen++ {
		line := logs.lines[c.logSeen]
		// The set finds the secrets whose first bytes the line carries;
		// a leak in a log line is the whole secret.
		i := c.state.secrets.first(line, func(i int) bool { return strings.Contains(line, c.state.Secrets[c.state.secrets.list[i].order]) })
		if i >= 0 && len(c.violations) < maxViolations {
			// The line was written during the step that recorded the
			// trace's latest entry: that is the entry it is found at.
			c.violations = append(c.violations, Violation{Invariant: logInvariant, Seed: c.r.opts.Seed,
				Step: c.r.sim.Steps(), Entry: c.r.rec.Len(), Message: fmt.Sprintf("log line %d carries child content %q: %s",
					c.logSeen+1, abbreviate(c.state.Secrets[c.state.secrets.list[i].order]), abbreviate(line))})
		}
	}
}
