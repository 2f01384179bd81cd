package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/inputfile"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// ScheduleVersion is the version of the schedule file format.
const ScheduleVersion = 1

// MaxScheduleSize is the largest schedule file ReadSchedule reads, in
// bytes; crux-sim's --max-file-size sets it. A schedule of a run at the
// step limit holds a million choices, a few megabytes of JSON.
var MaxScheduleSize int64 = 64 << 20

// ErrSchedule is wrapped by every error about a schedule file: one that
// does not read, or names a scenario it does not fit.
var ErrSchedule = errors.New("bad schedule file")

// ScheduleFile is a failing run made explicit: the scheduling choices and the
// faults that fired. Replaying it needs the scenario but not the seed's
// random streams, so it stays valid when the code changes how it draws.
type ScheduleFile struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario"`
	// Target is the scenario to replay on: a built-in name, or the path
	// of a scenario file relative to the schedule file's directory.
	Target string `json:"target"`
	// Digest is the SHA-256 of the scenario's source (Scenario.Digest): a
	// schedule replays only on the source it was found on.
	Digest string `json:"digest,omitempty"`
	// Seed is the seed the failure was found under (for reference; the
	// replay does not draw from it).
	Seed      int64  `json:"seed"`
	Signature string `json:"signature"`
	// Defects are the defects planted in the runtime when it failed.
	Defects core.Defects `json:"defects,omitzero"`
	// CheckLogs: the failure was found checking the request log too
	// (Options.CheckLogs), and its replay checks it.
	CheckLogs bool `json:"checkLogs,omitempty"`
	Plan      Plan `json:"plan"`
	// Choices are the scheduling choices, index into the runnable actors
	// at each step; past the end the first runnable actor goes.
	Choices []int `json:"choices"`

	// path is the file the schedule was read from.
	path string
	// targetFile is the absolute path of a file target when the
	// schedule was made, for WriteFile to write relative to itself.
	targetFile string
}

// Options replays the schedule.
func (s *ScheduleFile) Options() Options {
	plan := s.Plan
	return Options{Seed: s.Seed, Replay: s.Choices, ReplayStrict: true, Plan: &plan, Testing: core.Testing{Defects: s.Defects}, CheckLogs: s.CheckLogs}
}

// Replay runs the schedule on the scenario.
func (s *ScheduleFile) Replay(sc *scenarios.Scenario) *Outcome { return Run(sc, s.Options()) }

// Describe renders the schedule for people.
func (s *ScheduleFile) Describe() string {
	var b strings.Builder
	nonzero := 0
	for _, c := range s.Choices {
		if c != 0 {
			nonzero++
		}
	}
	fmt.Fprintf(&b, "%d scheduling choices (%d not the first runnable actor)", len(s.Choices), nonzero)
	if len(s.Plan.Faults) == 0 {
		b.WriteString(", no faults")
	}
	for _, f := range s.Plan.Faults {
		b.WriteString("; " + f.String())
	}
	return b.String()
}

// WriteFile writes the schedule as indented JSON. A target that is a file
// is written relative to the schedule file's directory, which is where
// ReadSchedule looks for it.
func (s *ScheduleFile) WriteFile(path string) error {
	out := *s
	if s.targetFile != "" {
		dir, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, s.targetFile)
		if err != nil {
			return fmt.Errorf("schedule %s: its target %s has no path relative to it: %w", path, s.targetFile, err)
		}
		out.Target = filepath.ToSlash(rel)
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// newSchedule starts the schedule of a failing run of sc, found by
// replaying target.
func newSchedule(sc *scenarios.Scenario, target string, failed *Outcome, sig string, d core.Defects, checkLogs bool) *ScheduleFile {
	s := &ScheduleFile{Version: ScheduleVersion, Scenario: sc.Name, Target: target, Digest: sc.Digest, Seed: failed.Seed,
		Signature: sig, Defects: d, CheckLogs: checkLogs, Plan: failed.Fired, Choices: choices(failed.Decisions)}
	if isFileSource(sc) {
		if abs, err := filepath.Abs(sc.Source); err == nil {
			s.targetFile = abs
		}
	}
	return s
}

// isFileSource reports whether a scenario was loaded from a file (not a
// built-in, not built in Go).
func isFileSource(sc *scenarios.Scenario) bool {
	return sc.Digest != "" && !strings.HasPrefix(sc.Source, "builtin:") && !strings.HasPrefix(sc.Source, "go:")
}

// ReadSchedule reads a schedule file: only a regular file, at most
// MaxScheduleSize bytes, with every field in range (a negative choice, a
// fault's negative latency or an unknown fault kind is an error, not
// something to coerce).
func ReadSchedule(path string) (*ScheduleFile, error) {
	b, err := inputfile.Read(path, inputfile.Limit{Bytes: MaxScheduleSize, What: "a schedule file", Raise: "--max-file-size (harness.MaxScheduleSize in Go)"})
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrSchedule, path, err)
	}
	var s ScheduleFile
	if line, col, err := inputfile.DecodeJSON(b, &s); err != nil {
		if line > 0 {
			return nil, fmt.Errorf("%w %s:%d:%d: not a schedule file: %v", ErrSchedule, path, line, col, err)
		}
		return nil, fmt.Errorf("%w %s: not a schedule file: %v", ErrSchedule, path, err)
	}
	if s.Version != ScheduleVersion {
		return nil, fmt.Errorf("%w %s: schedule version %d, this crux-sim reads version %d", ErrSchedule, path, s.Version, ScheduleVersion)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrSchedule, path, err)
	}
	s.path = path
	return &s, nil
}

// validate checks what a schedule says on its own; Check checks it against
// its scenario, and a replay that meets a choice no actor answers to says
// so (Fits).
func (s *ScheduleFile) validate() error {
	if s.Scenario == "" || s.Target == "" {
		return errors.New("a schedule names its scenario and target")
	}
	if s.Digest != "" {
		if _, err := hex.DecodeString(s.Digest); err != nil || len(s.Digest) != 2*sha256.Size {
			return fmt.Errorf("digest %q is not a SHA-256 in hex", s.Digest)
		}
	}
	for i, c := range s.Choices {
		if c < 0 {
			return fmt.Errorf("choice %d is %d; a choice is an index into the runnable actors, 0 or more", i+1, c)
		}
	}
	for i, f := range s.Plan.Faults {
		what := fmt.Sprintf("planned fault %d", i+1)
		switch f.Kind {
		case scenarios.FaultProviderError, scenarios.FaultLatency, scenarios.FaultAction, scenarios.FaultCrash:
		default:
			return fmt.Errorf("%s has kind %q; a fault is provider-error, latency, action or crash", what, f.Kind)
		}
		switch {
		case f.Source < -1:
			return fmt.Errorf("%s has source %d; a source is a fault's index in the scenario, or -1", what, f.Source)
		case f.Latency < 0 || f.Delay < 0:
			return fmt.Errorf("%s has a negative latency or delay", what)
		case f.Yields < 0 || f.Run < 0 || f.Step < 0:
			return fmt.Errorf("%s has a negative yields, run or step", what)
		case f.Yields > scenarios.MaxJitter:
			return fmt.Errorf("%s waits %d yields; a jitter is at most %d", what, f.Yields, scenarios.MaxJitter)
		case (f.Kind == scenarios.FaultAction || f.Kind == scenarios.FaultCrash) && f.Source < 0:
			return fmt.Errorf("%s is an action or crash, which comes from one of the scenario's faults, but has source %d", what, f.Source)
		}
	}
	return nil
}

// Check reports whether sc is the scenario the schedule was found on: the
// same name, the same source (when both record a digest), and a fault for
// every planned fault's source.
func (s *ScheduleFile) Check(sc *scenarios.Scenario) error {
	where := s.path
	if where == "" {
		where = "the schedule"
	}
	if sc.Name != s.Scenario {
		return fmt.Errorf("%w %s: it was found on scenario %q, not %q", ErrSchedule, where, s.Scenario, sc.Name)
	}
	if s.Digest != "" && sc.Digest != "" && s.Digest != sc.Digest {
		return fmt.Errorf("%w %s: scenario %q has changed since the schedule was found on it (its SHA-256 is %.12s…, the schedule's %.12s…); fuzz it again", ErrSchedule, where, sc.Name, sc.Digest, s.Digest)
	}
	for i, f := range s.Plan.Faults {
		if f.Source >= len(sc.Faults) {
			return fmt.Errorf("%w %s: planned fault %d comes from fault %d, but scenario %q has %d", ErrSchedule, where, i+1, f.Source+1, sc.Name, len(sc.Faults))
		}
	}
	return nil
}

// Fits reports whether a replay of the schedule found every choice in
// range: a choice past the runnable actors means the schedule was made
// for another run (the scenario or the runtime changed), and what ran is
// not what it recorded.
func (s *ScheduleFile) Fits(o *Outcome) error {
	m := o.Misfit
	if m == nil {
		return nil
	}
	where := s.path
	if where == "" {
		where = "the schedule"
	}
	return fmt.Errorf("%w %s: choice %d is %d, but only %d actors could run at that step (choices count from 0); the schedule does not fit scenario %q as it is now", ErrSchedule, where, m.Index+1, m.Choice, m.Runnable, o.Scenario)
}

// LoadTarget loads the scenario the schedule names and checks that it is
// the one (Check). A built-in is loaded by name. A file is resolved only
// relative to the schedule file's directory (an absolute target is
// refused), only to a regular file that is no symbolic link, and only up to
// scenarios.MaxFileSize bytes; its digest is checked before it is parsed,
// and no error quotes what it holds, since a schedule file can name any
// file at all.
func (s *ScheduleFile) LoadTarget() (*scenarios.Scenario, error) {
	where := s.path
	if _, ok := scenarios.BuiltinSource(s.Target); ok && !strings.ContainsAny(s.Target, `/\`) {
		sc, err := scenarios.Builtin(s.Target)
		if err != nil {
			return nil, err
		}
		return sc, s.Check(sc)
	}
	if filepath.IsAbs(s.Target) || filepath.VolumeName(s.Target) != "" || strings.HasPrefix(s.Target, `\`) {
		return nil, fmt.Errorf("%w %s: its target %q is an absolute path; a schedule's target is a built-in name or a path relative to the schedule file", ErrSchedule, where, s.Target)
	}
	path := filepath.Join(filepath.Dir(s.path), filepath.FromSlash(s.Target))
	src, err := inputfile.Read(path, inputfile.Limit{Bytes: scenarios.MaxFileSize, What: "a scenario file",
		Raise: "--max-file-size (scenarios.MaxFileSize in Go)", NoSymlinks: true})
	if err != nil {
		return nil, fmt.Errorf("%w %s: its target %s: %w", ErrSchedule, where, path, err)
	}
	if s.Digest != "" {
		if sum := sha256.Sum256(src); hex.EncodeToString(sum[:]) != s.Digest {
			return nil, fmt.Errorf("%w %s: its target %s is not the scenario the schedule was found on (its SHA-256 differs: it changed since, or is another file); fuzz it again", ErrSchedule, where, path)
		}
	}
	sc, err := scenarios.Load(path, src)
	if err != nil {
		// Not quoted: an unverified target may be any file at all.
		return nil, fmt.Errorf("%w %s: its target %s does not load as a scenario file (crux-sim run %s lists its problems)", ErrSchedule, where, path, path)
	}
	return sc, s.Check(sc)
}

func choices(ds []sim.Decision) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Choice
	}
	return out
}
