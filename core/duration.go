package core

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a Crux duration string: one or more segments of a
// non-negative decimal number and a unit, ms, s, m, h or d, such as "250ms",
// "5s", "1m", "1.5h" or "1m30s", or "0". A sign, any other bare number, an
// unknown unit or an empty string is an error.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration; use a number and a unit such as \"5s\"")
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	if s == "0" {
		return 0, nil // zero needs no unit
	}
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("duration %q: expected a number at %q", s, rest)
		}
		num, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q: bad number %q", s, rest[:i])
		}
		rest = rest[i:]
		j := 0
		for j < len(rest) && rest[j] >= 'a' && rest[j] <= 'z' {
			j++
		}
		var unit time.Duration
		switch strings.ToLower(rest[:j]) {
		case "ms":
			unit = time.Millisecond
		case "s":
			unit = time.Second
		case "m":
			unit = time.Minute
		case "h":
			unit = time.Hour
		case "d":
			unit = 24 * time.Hour
		case "":
			return 0, fmt.Errorf("duration %q: missing unit after %s (use ms, s, m, h or d)", s, strconv.FormatFloat(num, 'f', -1, 64))
		default:
			return 0, fmt.Errorf("duration %q: unknown unit %q (use ms, s, m, h or d)", s, rest[:j])
		}
		rest = rest[j:]
		d := num * float64(unit)
		if d > float64(1<<62) {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		total += time.Duration(d)
	}
	return total, nil
}
