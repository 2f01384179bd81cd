package platform

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/platform/store"
)

// WorkspacePrefix is the storage prefix of a tree's workspace. Every session
// of the tree (workers, delegated children, task attempts, scheduled runs)
// resolves to its root's prefix: no child prefix is ever allocated.
func WorkspacePrefix(root string) string { return "sessions/" + root + "/" }

// cleanPath turns a model's path ("notes.md", "/workspace/notes.md") into a
// key below the workspace, refusing escapes.
func cleanPath(p string) (string, error) {
	p = strings.TrimPrefix(strings.TrimSpace(p), "/workspace")
	c := path.Clean("/" + p)
	if c == "/" || strings.Contains(c, "..") {
		return "", modelErr("invalid_path", "%q is not a file path inside the workspace", p)
	}
	return strings.TrimPrefix(c, "/"), nil
}

// FindingKind says what a finding is about.
type FindingKind string

// Finding kinds.
const (
	// FindingOverwrite: one session overwrote another's workspace file
	// (Root, Path, Writer, Previous, Siblings).
	FindingOverwrite FindingKind = "workspace.overwrite"
	// FindingStranded: a task nothing will ever move again stays where it
	// is, as the seed says, and its spawner was told (Task, Spawner,
	// Reason, Other).
	FindingStranded FindingKind = "task.stranded"
)

// Finding is something a user of the platform wants to see that is not an
// error: one session overwriting another's workspace file, or a task left
// stranded.
type Finding struct {
	Kind     FindingKind `json:"kind"`
	Root     string      `json:"root"`
	Path     string      `json:"path,omitempty"`
	Writer   string      `json:"writer,omitempty"`
	Previous string      `json:"previous,omitempty"`
	Siblings bool        `json:"siblings,omitempty"`
	// Task, Spawner and Reason describe a stranded task; Other is the
	// parent task that failed or was cancelled.
	Task    string         `json:"task,omitempty"`
	Spawner string         `json:"spawner,omitempty"`
	Reason  StrandedReason `json:"reason,omitempty"`
	Other   string         `json:"other,omitempty"`
	At      time.Time      `json:"at"`
}

// Findings returns every finding so far, in order.
func (p *Platform) Findings() []Finding {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.findings)
}

// WriteFile writes a workspace file as a session would (for tests and
// seeding a workspace).
func (p *Platform) WriteFile(sessionID, file, content string) error {
	p.mu.Lock()
	s := p.sessions.get(sessionID)
	p.mu.Unlock()
	if s == nil {
		return ErrUnknownSession
	}
	_, err := p.writeFile(s, file, content)
	return err
}

// ReadFile reads a file of a tree's workspace.
func (p *Platform) ReadFile(root, file string) (string, error) {
	rel, err := cleanPath(file)
	if err != nil {
		return "", err
	}
	data, _, err := p.store.GetFile(p.ctx(), WorkspacePrefix(root)+rel)
	return string(data), err
}

func (p *Platform) writeFile(s *session, file, content string) (map[string]any, error) {
	rel, err := cleanPath(file)
	if err != nil {
		return nil, err
	}
	var prev *store.FileMeta
	now := p.clock.Now()
	err = p.durable(func() error {
		var err error
		prev, err = p.store.PutFile(p.ctx(), WorkspacePrefix(s.root)+rel, []byte(content), s.id, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]any{"path": rel, "bytes": len(content)}
	if prev != nil && prev.Writer != s.id {
		p.mu.Lock()
		siblings := false
		if o := p.sessions.get(prev.Writer); o != nil && o.parent != "" && o.parent == s.parent {
			siblings = true
		}
		f := Finding{Kind: FindingOverwrite, Root: s.root, Path: rel, Writer: s.id, Previous: prev.Writer, Siblings: siblings, At: now}
		p.findings = append(p.findings, f)
		p.emitLocked(&Event{Session: s.root, Type: EventWorkspaceOverwrite, Path: rel, Child: s.id, Other: prev.Writer,
			Siblings: siblings})
		p.unlock()
		out["overwrote"] = prev.Writer
	}
	return out, nil
}

func (p *Platform) toolWriteFile(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Path, Content string }](&args)
	if err != nil {
		return nil, err
	}
	return p.writeFile(s, in.Path, in.Content)
}

func (p *Platform) toolReadFile(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Path string }](&args)
	if err != nil {
		return nil, err
	}
	data, err := p.ReadFile(s.root, in.Path)
	if errors.Is(err, store.ErrNotFound) {
		return nil, modelErr("not_found", "no file %q in the workspace", in.Path)
	}
	return data, err
}

func (p *Platform) toolListFiles(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Prefix string }](&args)
	if err != nil {
		return nil, err
	}
	root := WorkspacePrefix(s.root)
	metas, err := p.store.ListFiles(p.ctx(), root+strings.TrimPrefix(in.Prefix, "/"))
	if err != nil {
		return nil, err
	}
	files := make([]string, len(metas))
	for i, m := range metas {
		files[i] = strings.TrimPrefix(m.Key, root)
	}
	return map[string]any{"files": files}, nil
}

// ---- artifacts ----

// Artifact is something a session made for the conversation.
type Artifact struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Content string    `json:"content"`
	Creator string    `json:"creator"`
	At      time.Time `json:"at"`
}

// Artifacts returns a session's thread's artifacts: its own and those
// propagated up from delegated children.
func (p *Platform) Artifacts(sessionID string) []Artifact {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.artifacts[sessionID])
}

func (p *Platform) toolCreateArtifact(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Name, Content string }](&args)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.unlock()
	a := Artifact{ID: p.ids.NewID(IDArtifact), Name: in.Name, Content: in.Content, Creator: s.id, At: p.clock.Now()}
	p.artifacts[s.id] = append(p.artifacts[s.id], a)
	p.emitLocked(&Event{Session: s.id, Type: EventArtifact, Item: a.ID, Text: a.Name})
	// A delegated child's artifacts propagate up to its parent's thread,
	// and on up while the parent is itself a delegated child.
	for cur := s; cur.kind == KindDelegate; {
		par := p.sessions.get(cur.parent)
		if par == nil {
			break
		}
		p.artifacts[par.id] = append(p.artifacts[par.id], a)
		p.emitLocked(&Event{Session: par.id, Type: EventArtifact, Item: a.ID, Child: s.id, Text: a.Name})
		cur = par
	}
	return map[string]any{"artifact_id": a.ID}, nil
}

// ---- the coordination board ----

// board is a tree's coordination board: claims with expiry, and notes.
type board struct {
	root   string
	claims map[string]Claim
	notes  []Note
}

// Claim is a board claim.
type Claim struct {
	Key     string    `json:"key"`
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

// Note is a board note.
type Note struct {
	ID     string    `json:"id"`
	Author string    `json:"author"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}

func (p *Platform) boardLocked(root string) *board {
	b := p.board[root]
	if b == nil {
		b = &board{root: root, claims: map[string]Claim{}}
		p.board[root] = b
		i, _ := slices.BinarySearchFunc(p.boards, root, func(b *board, root string) int { return strings.Compare(b.root, root) })
		p.boards = slices.Insert(p.boards, i, b)
	}
	return b
}

// Board returns a tree's live claims (by key) and notes.
func (p *Platform) Board(root string) ([]Claim, []Note) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.board[root]
	if b == nil {
		return nil, nil
	}
	claims := make([]Claim, 0, len(b.claims))
	for _, k := range keys.Sorted(b.claims) {
		claims = append(claims, b.claims[k])
	}
	return claims, slices.Clone(b.notes)
}

func (p *Platform) toolBoardNote(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Text string }](&args)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := Note{ID: p.ids.NewID(IDNote), Author: s.id, Text: in.Text, At: p.clock.Now()}
	b := p.boardLocked(s.root)
	b.notes = append(b.notes, n)
	return map[string]any{"note_id": n.ID}, nil
}

func (p *Platform) toolBoardClaim(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Key, TTL string }](&args)
	if err != nil {
		return nil, err
	}
	ttl := p.opts.ClaimTTL
	if in.TTL != "" {
		if ttl, err = core.ParseDuration(in.TTL); err != nil {
			return nil, modelErr("invalid_arguments", "ttl: %v", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	b := p.boardLocked(s.root)
	if c, ok := b.claims[in.Key]; ok && c.Holder != s.id && c.Expires.After(now) {
		return map[string]any{"claimed": false, "holder": c.Holder, "expires": c.Expires.UTC().Format(time.RFC3339)}, nil
	}
	c := Claim{Key: in.Key, Holder: s.id, Expires: now.Add(ttl)}
	b.claims[in.Key] = c
	return map[string]any{"claimed": true, "expires": c.Expires.UTC().Format(time.RFC3339)}, nil
}

func (p *Platform) toolBoardRead(_ context.Context, s *session, _ core.ToolCall, _ toolArgs) (any, error) {
	claims, notes := p.Board(s.root)
	now := p.clock.Now()
	live := claims[:0:0]
	for _, c := range claims {
		if c.Expires.After(now) {
			live = append(live, c)
		}
	}
	return map[string]any{"claims": live, "notes": notes}, nil
}

// ---- the inbox ----

// InboxState is an inbox item's state.
type InboxState string

// Inbox states: pending items are actionable; the sweeper makes a pending
// item of a terminal session non-actionable.
const (
	InboxPending       InboxState = "pending"
	InboxAnswered      InboxState = "answered"
	InboxNonActionable InboxState = "non_actionable"
)

// InboxItem is a question a session put to its user.
type InboxItem struct {
	ID       string     `json:"id"`
	Session  string     `json:"session"`
	Question string     `json:"question"`
	State    InboxState `json:"state"`
	At       time.Time  `json:"at"`
}

// Inbox returns every inbox item in order.
func (p *Platform) Inbox() []InboxItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]InboxItem, len(p.inbox))
	for i, it := range p.inbox {
		out[i] = *it
	}
	return out
}

// Answer answers a pending inbox item: the answer is queued for its session,
// which wakes.
func (p *Platform) Answer(item, text string) error {
	p.mu.Lock()
	defer p.unlock()
	for _, it := range p.inbox {
		if it.ID != item {
			continue
		}
		if it.State != InboxPending {
			return errors.New("inbox item " + item + " is " + string(it.State))
		}
		s := p.sessions.get(it.Session)
		if s == nil || s.over() {
			return errors.New("inbox item " + item + ": its session is gone")
		}
		it.State = InboxAnswered
		p.pendingInbox--
		p.emitLocked(&Event{Session: s.id, Type: EventInboxAnswered, Item: item})
		p.enqueueLocked(s, text)
		return nil
	}
	return errors.New("no inbox item " + item)
}

func (p *Platform) toolAskUserQuestion(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Question string }](&args)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.unlock()
	it := &InboxItem{ID: p.ids.NewID(IDInbox), Session: s.id, Question: in.Question, State: InboxPending, At: p.clock.Now()}
	p.inbox = append(p.inbox, it)
	p.pendingInbox++
	p.emitLocked(&Event{Session: s.id, Type: EventInboxQuestion, Item: it.ID, Text: in.Question})
	return map[string]any{"inbox_id": it.ID, "status": "pending"}, nil
}
