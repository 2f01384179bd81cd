package core

import (
	"fmt"
	"math"
	"time"
)

// ParseDuration reads a Crux duration string: a whole number, optional
// whitespace, then a unit, ms, s, m, h or d, such as "250ms", "5s", "5 s",
// "1 m" or "2h". Nothing else is one: no sign, fraction, sum of segments
// ("1m30s"), bare number (not even "0"), other unit, surrounding space or
// empty string; nor a duration longer than time.Duration holds (about 292
// years). It is the one reader of Crux durations: the work tool's timeout,
// scenario files, the platform's tools and the command line all use it.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration; use a whole number and a unit such as \"5s\"")
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	switch {
	case i == 0 && s[0] == '-':
		return 0, fmt.Errorf("duration %q is negative", s)
	case i == 0:
		return 0, fmt.Errorf("duration %q must start with a whole number, as in \"5s\"", s)
	}
	digits := s[:i]
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	name := s[i:]
	unit := durationUnit(name)
	switch {
	case name == "":
		return 0, fmt.Errorf("duration %q has no unit; use ms, s, m, h or d, as in \"%ss\"", s, digits)
	case unit == 0:
		return 0, fmt.Errorf("duration %q: %q is not a unit; a duration is one whole number and one unit, ms, s, m, h or d, such as \"90s\"", s, name)
	}
	limit := uint64(math.MaxInt64 / int64(unit))
	var n uint64
	for j := range len(digits) {
		n = n*10 + uint64(digits[j]-'0')
		if n > limit {
			return 0, fmt.Errorf("duration %q is too long: the longest is %d%s", s, limit, name)
		}
	}
	return time.Duration(n) * unit, nil
}

// durationUnit is the unit of a Crux duration of the name, or 0: ms, s,
// m, h or d. (A switch, which compares the few bytes in place: the
// platform reads a duration at every loop_wait.)
func durationUnit(name string) time.Duration {
	switch name {
	case "ms":
		return time.Millisecond
	case "s":
		return time.Second
	case "m":
		return time.Minute
	case "h":
		return time.Hour
	case "d":
		return 24 * time.Hour
	}
	return 0
}
