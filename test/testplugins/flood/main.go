// Command flood is a hostile test plugin: its flood tool starts writing to
// stdout and stderr without end (through the os.Stdout and os.Stderr that
// go-plugin redirects, and straight to file descriptors 1 and 2, in long
// lines and in endless ones), then answers; ping answers at once. The host
// must stay responsive and keep only a bounded tail of the output.
package main

import (
	"bytes"
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/nexus-eval/nexus/sdk"
)

type Empty struct{}

type Started struct {
	Writers int `json:"writers" jsonschema:"goroutines now flooding"`
}

var once sync.Once

func flood() {
	line := append(bytes.Repeat([]byte("flood "), 2000), '\n')
	endless := bytes.Repeat([]byte("x"), 64<<10) // no newline, ever
	writers := []func(){
		func() { os.Stdout.Write(line) },
		func() { os.Stderr.Write(line) },
		func() { syscall.Write(1, line) },
		func() { syscall.Write(2, line) },
		func() { syscall.Write(2, endless) },
	}
	for _, w := range writers {
		go func() {
			for {
				w()
			}
		}()
	}
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "flood", Version: "0.1.0", Description: "Floods stdout and stderr"},
		sdk.Tool("flood", "Starts flooding stdout and stderr, then answers", func(context.Context, Empty) (Started, error) {
			once.Do(flood)
			return Started{Writers: 5}, nil
		}),
		sdk.Tool("ping", "Answers at once", func(context.Context, Empty) (Empty, error) { return Empty{}, nil }),
	)
}
