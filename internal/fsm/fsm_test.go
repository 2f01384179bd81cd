package fsm_test

import (
	"errors"
	"testing"

	"github.com/crux-sim/crux-sim/internal/fsm"
)

var errState = errors.New("not now")

var door = fsm.Table[string, string]{Name: "door", Sentinel: errState, Moves: map[fsm.Edge[string, string]]string{
	{From: "closed", On: "open"}: "open",
	{From: "open", On: "close"}:  "closed",
	{From: "open", On: "wedge"}:  "open",
}}

func TestAMoveTheTableHasIsTaken(t *testing.T) {
	if to, err := door.Next("closed", "open"); err != nil || to != "open" {
		t.Fatalf("open on closed: %q, %v", to, err)
	}
}

func TestAMoveTheTableLacksIsRefusedLoudlyAndChangesNothing(t *testing.T) {
	to, err := door.Next("closed", "close")
	var illegal *fsm.Illegal[string, string]
	if !errors.As(err, &illegal) || illegal.From != "closed" || illegal.On != "close" {
		t.Fatalf("want an *Illegal for close on closed, got %v", err)
	}
	if to != "closed" {
		t.Errorf("a refused move left the state %q", to)
	}
	if err.Error() != "illegal door transition: close on closed" {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, errState) {
		t.Error("a refusal matches the table's sentinel")
	}
}

func TestLegalReadsTheTable(t *testing.T) {
	if !door.Legal("open", "open") || !door.Legal("open", "closed") || door.Legal("closed", "closed") {
		t.Error("Legal disagrees with the table")
	}
}

func TestReachableFollowsMovesThroughTheStatesBetween(t *testing.T) {
	chain := fsm.Table[string, string]{Name: "chain", Moves: map[fsm.Edge[string, string]]string{
		{From: "queued", On: "start"}: "running",
		{From: "running", On: "end"}:  "done",
	}}
	if chain.Legal("queued", "done") || !chain.Reachable("queued", "done") {
		t.Error("queued reaches done through running, in two moves, not one")
	}
	if chain.Reachable("done", "queued") || chain.Reachable("running", "queued") {
		t.Error("no move leads back")
	}
	if !chain.Reachable("done", "done") {
		t.Error("a state reaches itself")
	}
}
