package launch

import (
	"bytes"
	"strings"
	"sync"
)

// tail keeps the last n lines written to it, so a launch or crash error
// can show what the plugin said last without holding all of its output.
type tail struct {
	mu      sync.Mutex
	n       int
	lines   []string
	partial []byte
}

// maxLine bounds one kept line; a plugin flooding one endless line cannot
// grow the host's memory.
const maxLine = 1024

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := p
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			room := maxLine - len(t.partial)
			t.partial = append(t.partial, data[:min(len(data), max(room, 0))]...)
			break
		}
		room := maxLine - len(t.partial)
		t.partial = append(t.partial, data[:min(i, max(room, 0))]...)
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		data = data[i+1:]
	}
	return len(p), nil
}

func (t *tail) push(line string) {
	if len(t.lines) == t.n {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:t.n-1]
	}
	t.lines = append(t.lines, line)
}

// String returns the last n lines, the unfinished one last.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.partial) > 0 {
		if len(lines) == t.n {
			lines = lines[1:]
		}
		lines = append(lines[:len(lines):len(lines)], string(t.partial))
	}
	return strings.Join(lines, "\n")
}
