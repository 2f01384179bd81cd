package trace

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// isoTime is the rule replaceTimestamps implements by hand; the specs below
// hold the two to the same answers.
var isoTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)`)

var tsStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

func byRegexp(s string) string {
	return isoTime.ReplaceAllStringFunc(s, func(ts string) string {
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return ts
		}
		return Offset(at.Sub(tsStart))
	})
}

var timestampCases = []string{
	"",
	"no time here",
	`{"createdAt":"2026-01-01T00:00:05.000Z","startedAt":"2026-01-01T00:00:05Z"}`,
	"2026-01-01T00:01:30.250+00:00 and 2026-01-01T01:00:00-01:00",
	"12026-01-01T00:00:01Z",                          // a match may start inside a longer number
	"2026-01-01T00:00:01.Z",                          // a dot without digits is no fraction
	"2026-01-01T00:00:01.5",                          // no zone: no match
	"2026-13-45T99:99:99Z then 2026-01-01T00:00:02Z", // matched but unparsable, left alone
	"2026-01-01T00:00:01+0100",
	"T 2026-01-01T00:00:03ZT2026-01-01T00:00:04Z",
	"2026-01-01T00:00:01Z2026-01-01T00:00:02Z",
	"ééé 2026-01-01T00:00:07Z ééé",
	"0026-01-01T00:01:30.250+00:00", // centuries before the start: the most negative offset
}

func TestTimestampsInContentsBecomeOffsetsExactlyAsTheRegexpRuleSays(t *testing.T) {
	for _, c := range timestampCases {
		if got, want := replaceTimestamps(c, tsStart), byRegexp(c); got != want {
			t.Errorf("replaceTimestamps(%q) = %q, the rule gives %q", c, got, want)
		}
	}
}

func TestAContentWithoutTimestampsIsReturnedAsIsWithoutCopying(t *testing.T) {
	s := strings.Repeat("plain words, no times; ", 4)
	if got := replaceTimestamps(s, tsStart); got != s || (len(got) > 0 && &[]byte(got)[0] == nil) {
		t.Errorf("replaceTimestamps changed %q to %q", s, got)
	}
	if n := testing.AllocsPerRun(100, func() { replaceTimestamps(s, tsStart) }); n != 0 {
		t.Errorf("replaceTimestamps allocated %v times for a content without timestamps", n)
	}
}

func FuzzTimestampReplacementMatchesTheRegexpRule(f *testing.F) {
	for _, c := range timestampCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := replaceTimestamps(s, tsStart), byRegexp(s); got != want {
			t.Errorf("replaceTimestamps(%q) = %q, the rule gives %q", s, got, want)
		}
	})
}

func TestTheRuntimesTimestampFormIsReadAsTimeParseReadsIt(t *testing.T) {
	for _, ts := range []string{
		"2026-01-01T00:00:05.000Z", "2026-12-31T23:59:59.999Z", "2024-02-29T12:00:00.123Z", "2026-02-29T00:00:00.000Z",
		"2026-13-01T00:00:00.000Z", "2026-01-32T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-01-01T23:60:00.000Z",
		"2026-01-01T23:59:60.000Z", "0000-01-01T00:00:00.000Z", "2026-00-10T00:00:00.000Z", "2026-01-00T00:00:00.000Z",
		// Not the form at all, though of its length: other separators,
		// and characters that are not digits where digits stand.
		"2026x01x01x00x00x00.000Z", "2026-01-01 00:00:00.000Z", "2026-01-01T00:00:0:.000Z", "2026-01-01T00:00:00.00aZ",
		"20 6-01-01T00:00:00.000Z", "2026-01-01T0/:00:00.000Z",
		// The platform's form, in seconds, and what is near it.
		"2026-01-01T01:00:00Z", "2026-12-31T23:59:59Z", "2024-02-29T12:00:00Z", "2026-02-29T00:00:00Z", "2026-01-01T24:00:00Z",
		"2026-01-01T23:59:60Z", "0000-01-01T00:00:00Z", "0000-02-29T00:00:00Z", "0000-03-01T00:00:00Z", "1969-12-31T23:59:59Z",
		"1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-00-10T00:00:00Z", "2026-01-01T00:00:00z", "2026-01-01T00:00:0aZ",
		"2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1Z", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00.000+01:00",
		"2026x01x01x00x00x00Z", "2026-01-01T00:00:00Zx", "2026-01-01T00:00:00.0a0Z",
	} {
		want, werr := time.Parse(time.RFC3339Nano, ts)
		got, err := parseTimestamp(ts)
		if (err == nil) != (werr == nil) || !got.Equal(want) {
			t.Errorf("parseTimestamp(%s) = %v, %v; time.Parse gives %v, %v", ts, got, err, want, werr)
		}
	}
}

// The filter a document passes before it is read for its times never
// turns one away that holds a time.
func TestTheTimestampFilterNeverMissesATime(t *testing.T) {
	for _, s := range timestampCases {
		if isoTime.MatchString(s) && !mayHoldTimestamp(s) {
			t.Errorf("the filter turns away %q", s)
		}
	}
	for _, s := range []string{"2026-01-01T00:00:05Z", `"Tx":"2026-01-01T00:00:05Z"`, "TTTTTTTTTTTT2026-01-01T00:00:05Z", "x2026-01-01T00:00:05ZT"} {
		if !mayHoldTimestamp(s) {
			t.Errorf("the filter turns away %q", s)
		}
	}
	for _, s := range []string{"", "T", "no time here", "TTTTTTTTTTTTTTTT", "2026-01-01 00:00:05Z", "2026-01-01T"} {
		if mayHoldTimestamp(s) {
			t.Errorf("the filter lets %q through", s)
		}
	}
}

// The runtime's form is read as the instant time.Date makes of its fields
// exactly when time.Date keeps every field as it is (a 30 February, an
// hour 24 or a second 60 it would carry into the next field): for every
// month 0-13 and day 0-32 of leap and common years, and the edges of the
// clock's fields.
func TestTheRuntimesFormIsReadWhereTimeDateKeepsItsFields(t *testing.T) {
	for _, y := range []int{0, 1, 99, 100, 399, 400, 401, 1600, 1900, 1969, 1970, 2000, 2024, 2026, 2100, 2400, 9999} {
		for mo := 0; mo <= 13; mo++ {
			for d := 0; d <= 32; d++ {
				for _, c := range [][4]int{{0, 0, 0, 0}, {23, 59, 59, 999}, {24, 0, 0, 0}, {0, 60, 0, 0}, {0, 0, 60, 0}} {
					h, mi, sec, ms := c[0], c[1], c[2], c[3]
					want := time.Date(y, time.Month(mo), d, h, mi, sec, ms*int(time.Millisecond), time.UTC)
					kept := want.Year() == y && int(want.Month()) == mo && want.Day() == d && want.Hour() == h && want.Minute() == mi && want.Second() == sec
					// The runtime's form, and the platform's in seconds.
					ts := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, mo, d, h, mi, sec, ms)
					inSeconds := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", y, mo, d, h, mi, sec)
					if got, err := parseTimestamp(ts); kept && (err != nil || !got.Equal(want)) || !kept && err == nil {
						t.Fatalf("parseTimestamp(%s) = %v, %v; time.Date keeps its fields: %v", ts, got, err, kept)
					}
					want = time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
					if got, err := parseTimestamp(inSeconds); kept && (err != nil || !got.Equal(want)) || !kept && err == nil {
						t.Fatalf("parseTimestamp(%s) = %v, %v; time.Date keeps its fields: %v", inSeconds, got, err, kept)
					}
				}
			}
		}
	}
}
