package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nexus-eval/nexus/host/runner"
	"github.com/nexus-eval/nexus/host/runtime"
	"github.com/nexus-eval/nexus/host/store"
)

// resumeLatest is the value of a bare --resume: the latest run of the same
// command.
const resumeLatest = "\x00latest"

func newRunCmd(g *globals) *cobra.Command {
	var (
		task, agent, llmName, db, output, resume string
		limit, concurrency                       int
		taskArgs                                 []string
		timeout                                  time.Duration
		force, network                           bool
	)
	cmd := &cobra.Command{
		Use:   "run --task TASK --agent AGENT",
		Short: "Run an agent over every instance of a task, score each and record the run",
		Long: "Run an agent over every instance of a task: each instance in its own execution (its own\n" +
			"runtime and tool state), scored by the task and recorded in the runs database as soon as it\n" +
			"ends. Ctrl-C cancels the instances in flight (recorded as cancelled); resume with --resume.\n\n" +
			"--resume ID resumes that run; a bare --resume resumes the latest run of the same command\n" +
			"(same task, agent, args, plugins, dataset and LLM), or starts one. Only instances without a\n" +
			"result or with infra_error, timeout or cancelled run again.",
		Example: `  nexus-host run --task arith --agent oracle --task-arg n=100
  nexus-host run --task exercises --agent oracle -o json
  nexus-host run --task arith --agent oracle --task-arg n=100 --resume
  nexus-host run --resume 20260101T120000.000Z-1a2b3c4d`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, "text", "json"); err != nil {
				return err
			}
			switch {
			case len(args) == 1 && resume == resumeLatest:
				resume = args[0] // --resume ID
			case len(args) == 1:
				return fmt.Errorf("unexpected argument %q: run takes flags only (did you mean --resume %s?)", args[0], args[0])
			}
			if resume == "" && (task == "" || agent == "") {
				return errors.New("run needs --task and --agent (or --resume RUN_ID): see `nexus-host list --kind task` and `nexus-host list --kind agent`")
			}
			if resume == "" && force {
				return errors.New("--force only applies with --resume")
			}
			targs, err := parseTaskArgs(taskArgs)
			if err != nil {
				return err
			}
			if g.runtime == "sandbox" {
				if err := (&runtime.Sandbox{}).Available(); err != nil {
					return fmt.Errorf("--runtime sandbox: %w; or pass --runtime local to run without isolation", err)
				}
			}
			st, err := store.Open(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			s, err := g.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer s.Close()

			cfg := runner.Config{
				Host: s.Host, Store: st, Task: task, Agent: agent, TaskArgs: targs,
				LLM: llmName, LLMConfig: s.llm, Concurrency: concurrency, Limit: limit, Timeout: timeout,
				Force: force, Network: network,
			}
			switch resume {
			case "":
			case resumeLatest:
				cfg.ResumeLatest = true
			default:
				cfg.Resume = resume
			}
			stderr := cmd.ErrOrStderr()
			rep := newReporter(stderr)
			cfg.Progress = rep.update
			sum, runErr := runner.Run(cmd.Context(), cfg)
			rep.finish()
			if sum == nil {
				return runErr
			}
			for _, n := range sum.Notes {
				fmt.Fprintf(stderr, "note: %s\n", n)
			}
			if output == "json" {
				if err := writeJSON(cmd.OutOrStdout(), sum); err != nil {
					return err
				}
			} else {
				printSummary(cmd.OutOrStdout(), sum)
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&task, "task", "", "the task `NAME` (short or plugin/name)")
	f.StringVar(&agent, "agent", "", "the agent `NAME` (short or plugin/name)")
	f.IntVar(&limit, "limit", 0, "run at most `N` instances (0: all)")
	f.IntVar(&concurrency, "concurrency", 0, "run `C` instances at once (default: the number of CPUs)")
	f.StringArrayVar(&taskArgs, "task-arg", nil, "task argument `KEY=VALUE` (repeatable); VALUE is JSON when it parses (5, true, {\"a\":1}), else a string")
	f.StringVar(&llmName, "llm", "", "the default LLM client `NAME` ([llm.NAME] in the host config)")
	f.DurationVar(&timeout, "timeout", 0, "time limit per instance, agent and evaluation together (0: none)")
	f.StringVar(&db, "db", store.DefaultPath, "the runs database `PATH`")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json (one object at the end)")
	f.StringVar(&resume, "resume", "", "resume run `ID`; bare --resume resumes the latest run of the same command")
	f.Lookup("resume").NoOptDefVal = resumeLatest
	f.BoolVar(&force, "force", false, "resume even if the plugins, dataset or LLM config changed, or the run is marked running")
	f.BoolVar(&network, "network", false, "let the executions' runtimes reach the network")
	return cmd
}

// parseTaskArgs turns KEY=VALUE pairs into a JSON object: a VALUE that is
// valid JSON is taken as such, anything else as a string.
func parseTaskArgs(pairs []string) (json.RawMessage, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := map[string]json.RawMessage{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--task-arg %q: use KEY=VALUE", p)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("--task-arg %q: %s is given twice", p, k)
		}
		raw := json.RawMessage(strings.TrimSpace(v))
		if v == "" || !json.Valid(raw) {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
		m[k] = raw
	}
	return json.Marshal(m)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// reporter shows a run's progress on stderr: a live bar on a terminal,
// a plain line every few seconds otherwise.
type reporter struct {
	w        io.Writer
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	maxSet   bool
	last     runner.Progress
	lastLine time.Time
	seen     bool
}

// plainInterval is how often plain progress lines are printed.
const plainInterval = 2 * time.Second

func newReporter(w io.Writer) *reporter {
	r := &reporter{w: w, lastLine: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("starting"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("instances"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionFullWidth(),
			progressbar.OptionClearOnFinish(),
		)
	}
	return r
}

func (r *reporter) update(p runner.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.seen = p, true
	if r.bar != nil {
		if p.Total >= 0 && !r.maxSet {
			r.maxSet = true
			r.bar.ChangeMax(p.Total)
		}
		r.bar.Describe(progressText(p, false))
		_ = r.bar.Set(p.Done)
		return
	}
	if time.Since(r.lastLine) >= plainInterval {
		r.lastLine = time.Now()
		fmt.Fprintf(r.w, "%s\n", progressText(p, true))
	}
}

func (r *reporter) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Exit() // stops the spinner; the summary follows
	}
}

// progressText is one progress line: done/total (or done while the total
// is unknown), pass rate so far, errors and, in plain lines, ETA.
func progressText(p runner.Progress, plain bool) string {
	var b strings.Builder
	if plain {
		fmt.Fprintf(&b, "run %s: ", p.RunID)
		if p.Total >= 0 {
			fmt.Fprintf(&b, "%d/%d done", p.Done, p.Total)
		} else {
			fmt.Fprintf(&b, "%d done", p.Done)
		}
		b.WriteString(", ")
	}
	ran := p.Done - p.Skipped
	if ran > 0 {
		fmt.Fprintf(&b, "pass %.1f%%", 100*float64(p.Passed)/float64(ran))
	} else {
		b.WriteString("pass -")
	}
	fmt.Fprintf(&b, ", errors %d", p.ErrorCount())
	if p.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped (done before)", p.Skipped)
	}
	if plain {
		fmt.Fprintf(&b, ", elapsed %s", p.Elapsed.Round(time.Second))
		if p.Total >= 0 && ran > 0 && p.Done < p.Total {
			eta := time.Duration(float64(p.Elapsed) / float64(ran) * float64(p.Total-p.Done))
			fmt.Fprintf(&b, ", eta %s", eta.Round(time.Second))
		}
	}
	return b.String()
}

// printSummary writes the human summary of a run.
func printSummary(w io.Writer, s *runner.Summary) {
	fmt.Fprintf(w, "run %s: %s with %s: %s\n", s.RunID, s.Task, s.Agent, s.Status)
	if s.Resumed {
		fmt.Fprintf(w, "  resumed     %d instances ran now, %d were done before\n", s.Ran, s.Skipped)
	}
	fmt.Fprintf(w, "  instances   %d (%d passed, %d failed", s.Total, s.Passed, s.Failed)
	if s.Errored > 0 {
		fmt.Fprintf(w, ", %d of them with errors", s.Errored)
	}
	fmt.Fprint(w, ")")
	if s.Planned > s.Total {
		fmt.Fprintf(w, " of %d", s.Planned)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  pass rate   %.1f%%\n", 100*s.PassRate)
	fmt.Fprintf(w, "  mean score  %.3f\n", s.MeanScore)
	fmt.Fprintf(w, "  errors      %s\n", errorCounts(s.Errors))
	fmt.Fprintf(w, "  duration    p50 %s, p95 %s\n", ms(s.DurationP50MS), ms(s.DurationP95MS))
	fmt.Fprintf(w, "  tokens      %d (prompt %d, completion %d)\n", s.Tokens.TotalTokens, s.Tokens.PromptTokens, s.Tokens.CompletionTokens)
	fmt.Fprintf(w, "details: nexus-host runs show %s\n", s.RunID)
	if s.Status == store.StatusInterrupted || s.Status == store.StatusFailed {
		fmt.Fprintf(w, "resume:  nexus-host run --resume %s\n", s.RunID)
	}
}

func errorCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func ms(n int64) string {
	return (time.Duration(n) * time.Millisecond).String()
}
