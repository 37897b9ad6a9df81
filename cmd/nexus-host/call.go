package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/telemetry"
)

func newCallCmd(g *globals) *cobra.Command {
	var stats bool
	cmd := &cobra.Command{
		Use:   "call TOOL JSON",
		Short: "Call a tool with a JSON input and print its JSON output",
		Long: "Call a tool with a JSON input and print its JSON output.\n" +
			"JSON is the input itself, @FILE to read it from a file, or - to read stdin.\n" +
			"The tool's plugin is launched on first use and stopped when the call ends.\n" +
			"The call runs in a one-off execution: a runtime tool gets its own sandbox.",
		Example: `  nexus-host call calculator '{"expression": "2 * (3 + 4)"}'
  echo '{"expression": "1/3"}' | nexus-host call math/calculator -
  nexus-host call run_command '{"command": "uname -a; id"}'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			input, err := readInput(args[1], cmd.InOrStdin())
			if err != nil {
				return err
			}
			s, err := g.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer s.Close()
			tool, err := s.Tools.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			// A one-off execution: runtime tools get their own sandbox and
			// host services work, as in a run.
			e, err := s.NewExecution(host.ExecutionOptions{RunID: "call", InstanceID: args[0]})
			if err != nil {
				return err
			}
			defer e.Close()
			out, err := tool.Call(execution.With(cmd.Context(), e), input)
			if stats {
				defer printStats(cmd.Context(), cmd.ErrOrStderr(), s.metrics)
			}
			if err != nil {
				return err
			}
			var b bytes.Buffer
			if err := json.Indent(&b, out, "", "  "); err != nil {
				return fmt.Errorf("tool %q returned invalid JSON: %w", args[0], err)
			}
			b.WriteByte('\n')
			_, err = b.WriteTo(cmd.OutOrStdout())
			return err
		},
	}
	cmd.Flags().BoolVar(&stats, "stats", false, "print call count, errors and latency per component to stderr")
	return cmd
}

// printStats prints the metrics table.
func printStats(ctx context.Context, w io.Writer, m *telemetry.Metrics) {
	stats, err := m.Stats(ctx)
	if err != nil {
		fmt.Fprintf(w, "stats: %v\n", err)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tOP\tCALLS\tERRORS\tMEAN\tP50≤\tP99≤")
	for _, s := range stats {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3fms\t%gms\t%gms\n", s.Component, s.Op, s.Calls, s.Errors, s.MeanMS, s.P50MS, s.P99MS)
	}
	tw.Flush()
}

// readInput reads a call's input from the argument, a file (@path) or stdin
// (-), and checks that it is JSON, pointing at the first bad byte if not.
func readInput(arg string, stdin io.Reader) (json.RawMessage, error) {
	var data []byte
	var err error
	source := "input"
	switch {
	case arg == "-":
		source = "stdin"
		data, err = io.ReadAll(io.LimitReader(stdin, maxInput+1))
	case strings.HasPrefix(arg, "@"):
		source = arg[1:]
		data, err = readFileLimited(arg[1:])
	default:
		data = []byte(arg)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("%s is larger than %d bytes", source, maxInput)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %s", source, describeJSONError(data, err))
	}
	return bytes.TrimSpace(data), nil
}

// maxInput bounds a call's input.
const maxInput = 64 << 20

func readFileLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxInput+1))
}

// describeJSONError adds the line and column (1-based, in bytes, like
// manifest diagnostics) of a syntax error: of the byte the decoder rejected,
// or of the end of the input when it ended too soon.
func describeJSONError(data []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err.Error()
	}
	off := min(max(int(se.Offset), 0), len(data))
	if off > 0 && !strings.Contains(se.Error(), "end of JSON input") {
		// Offset counts the rejected byte itself. Counting lines up to
		// Offset put a rejected newline (one inside a string) at the
		// start of the next line.
		off--
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
	return fmt.Sprintf("%v at line %d, column %d", se, line, col)
}
