package scenarios

import "fmt"

// The YAML parser's cost is not linear in every shape of input: each
// unclosed [ or { costs it memory in proportion to what came before (200 KB
// of [ took it over 11 GB and 20 s), and each key of a block mapping costs
// it time in proportion to the keys before it (300,000 keys took four
// minutes), and every value costs it over a kilobyte. prescan bounds these in one pass over the bytes, before
// the parser sees them, so that what a hostile file can cost is a few
// passes over at most MaxFileSize bytes.
const (
	// maxDepth bounds how deeply collections nest, block and flow
	// together; the converter holds the parsed tree to the same bound.
	maxDepth = 200
	// maxKeys bounds the keys of one block mapping.
	maxKeys = 2000
	// maxValues bounds the scalars and collections of a file, as written
	// (aliases count once here; maxExpanded bounds them expanded): the
	// parser spends over a kilobyte on each.
	maxValues = 100_000
)

// nestedTooDeep is the problem of a file nested past maxDepth, from the
// pre-scan or the converter alike.
func nestedTooDeep(line, col int) *posError {
	return &posError{line: line, col: col, msg: fmt.Sprintf("YAML nested more than %d levels deep; a scenario is never that deep", maxDepth)}
}

// prescan reads src as YAML's lexical structure, no further: lines and
// their indentation, comments, quoted strings, block scalars, and the
// brackets of flow collections. It errs only towards counting more nesting
// than the parser will find (a stray bracket in a plain scalar), never less
// than maxDepth levels of brackets, and the converter checks the exact
// depth of whatever passes.
func prescan(src []byte) *posError {
	s := scanner{src: src, line: 1}
	return s.run()
}

type blockFrame struct {
	indent, keys int
}

type scanner struct {
	src  []byte
	i    int // the next byte
	line int
	bol  int // the index of the current line's first byte

	blocks []blockFrame
	flow   int  // open [ and { brackets
	values int  // scalars and collections begun
	quote  byte // the open quote, when inside a quoted scalar
	// literal is the indentation of the line that opened a block scalar (|
	// or >), whose content lines are indented deeper; -1 when none is open.
	literal int
}

func (s *scanner) col() int { return s.i - s.bol + 1 }

// value counts a value beginning at s.i.
func (s *scanner) value() *posError {
	if s.values++; s.values > maxValues {
		return &posError{line: s.line, col: s.col(), msg: fmt.Sprintf("more than %d YAML values; a scenario is never that large", maxValues)}
	}
	return nil
}

func (s *scanner) run() *posError {
	s.literal = -1
	for s.i < len(s.src) {
		if err := s.scanLine(); err != nil {
			return err
		}
	}
	return nil
}

// scanLine reads one line, from s.i at its start to just past its newline.
func (s *scanner) scanLine() *posError {
	s.bol = s.i
	indent := 0
	for s.i < len(s.src) && s.src[s.i] == ' ' {
		s.i++
		indent++
	}
	blank := s.i >= len(s.src) || s.src[s.i] == '\n' || s.src[s.i] == '\r' || s.src[s.i] == '#'
	switch {
	case s.literal >= 0 && (blank || indent > s.literal):
		// Text of a block scalar: nothing in it is structure.
		s.skipLine()
		return nil
	case s.literal >= 0:
		s.literal = -1
	}
	if s.quote == 0 && s.flow == 0 {
		if blank {
			s.skipLine()
			return nil
		}
		if err := s.blockLine(indent); err != nil {
			return err
		}
	}
	return s.rest(indent)
}

// blockLine accounts for a line that starts a block entry at indent: a key
// of a mapping, or one or more "- " items of sequences.
func (s *scanner) blockLine(indent int) *posError {
	for len(s.blocks) > 0 && s.blocks[len(s.blocks)-1].indent > indent {
		s.blocks = s.blocks[:len(s.blocks)-1]
	}
	if n := len(s.blocks); n == 0 || s.blocks[n-1].indent < indent {
		s.blocks = append(s.blocks, blockFrame{indent: indent})
	}
	if len(s.blocks) > maxDepth {
		return nestedTooDeep(s.line, s.col())
	}
	// "- - - x" opens a sequence per dash on the one line.
	dashes := 0
	for s.i+1 < len(s.src) && s.src[s.i] == '-' && (s.src[s.i+1] == ' ' || s.src[s.i+1] == '\n') {
		dashes++
		if len(s.blocks)+dashes > maxDepth {
			return nestedTooDeep(s.line, s.col())
		}
		s.i++
		for s.i < len(s.src) && s.src[s.i] == ' ' {
			s.i++
		}
	}
	if dashes == 0 && !(s.i+2 < len(s.src) && string(s.src[s.i:s.i+3]) == "---") {
		top := &s.blocks[len(s.blocks)-1]
		if top.keys++; top.keys > maxKeys {
			return &posError{line: s.line, col: s.col(), msg: fmt.Sprintf("a mapping with more than %d keys; a scenario never needs that many (split the data, or put it in a list)", maxKeys)}
		}
	}
	return nil
}

// rest reads the rest of a line: quoted scalars, comments, brackets, and a
// block scalar's indicator.
func (s *scanner) rest(indent int) *posError {
	// valueStart: the next byte could begin a value (only there does a
	// bracket open a collection in block context, or | and > a block
	// scalar).
	valueStart := true
	for s.i < len(s.src) {
		c := s.src[s.i]
		if s.quote != 0 {
			s.i++
			switch {
			case c == '\n':
				s.line++
				return nil
			case s.quote == '"' && c == '\\' && s.i < len(s.src) && s.src[s.i] != '\n':
				s.i++
			case c == s.quote && s.quote == '\'' && s.i < len(s.src) && s.src[s.i] == '\'':
				s.i++ // '' is a quote inside a single-quoted scalar
			case c == s.quote:
				s.quote = 0
				valueStart = false
			}
			continue
		}
		switch {
		case c == '\n':
			s.i++
			s.line++
			return nil
		case c == '#' && (s.i == s.bol || s.src[s.i-1] == ' ' || s.src[s.i-1] == '\t'):
			s.skipLine()
			return nil
		case (c == '"' || c == '\'') && valueStart:
			if err := s.value(); err != nil {
				return err
			}
			s.quote = c
			s.i++
		case (c == '[' || c == '{') && (valueStart || s.flow > 0):
			s.flow++
			if len(s.blocks)+s.flow > maxDepth {
				return nestedTooDeep(s.line, s.col())
			}
			if err := s.value(); err != nil {
				return err
			}
			s.i++
			valueStart = true
		case (c == ']' || c == '}') && s.flow > 0:
			s.flow--
			s.i++
			valueStart = false
		case (c == '|' || c == '>') && valueStart && s.flow == 0:
			if err := s.value(); err != nil {
				return err
			}
			s.literal = indent
			s.skipLine()
			return nil
		case c == ' ' || c == '\t':
			s.i++
		case c == ',' && s.flow > 0:
			s.i++
			valueStart = true
		case c == ':' && (s.i+1 >= len(s.src) || s.src[s.i+1] == ' ' || s.src[s.i+1] == '\n' || s.src[s.i+1] == '\r' || (s.flow > 0 && s.src[s.i+1] == ',')):
			s.i++
			valueStart = true
		case (c == '-' || c == '?') && valueStart && s.i+1 < len(s.src) && s.src[s.i+1] == ' ':
			s.i++
		case (c == '&' || c == '!') && valueStart:
			// An anchor or a tag comes before the value it names.
			for s.i < len(s.src) && s.src[s.i] != ' ' && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			if valueStart {
				if err := s.value(); err != nil {
					return err
				}
			}
			s.i++
			valueStart = false
		}
	}
	return nil
}

func (s *scanner) skipLine() {
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		s.i++
	}
	if s.i < len(s.src) {
		s.i++
		s.line++
	}
}
