// Package archtest holds no code, only the test that keeps crux-sim's
// imports pointing one way: cmd → harness → scenarios → {scripted,
// platform} → core, and harness → sim → core. Its table of allowed arrows
// is drawn in docs/architecture.md, and the test checks the drawing too,
// so the picture a newcomer reads stays true.
package archtest
