package launch

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nexus-eval/nexus/host/component"
)

// Supervision defaults.
const (
	DefaultHealthInterval = 5 * time.Second
	healthTimeout         = 2 * time.Second
	// healthFailures in a row mark a plugin as hung.
	healthFailures = 2
	backoffBase    = 100 * time.Millisecond
	backoffMax     = 10 * time.Second
	// A plugin that crashes breakerCrashes times within breakerWindow is
	// not relaunched.
	breakerCrashes = 5
	breakerWindow  = time.Minute
	// exitWait bounds how long a failed call waits to learn the exit
	// status of a plugin whose connection broke.
	exitWait = time.Second
)

// WithIdleTimeout stops plugins that served no call for d; they are
// relaunched on demand. 0 (the default) keeps them running.
func WithIdleTimeout(d time.Duration) Option { return func(c *config) { c.idleTimeout = d } }

// WithHealthInterval sets how often a running plugin is pinged; a plugin
// that misses two pings in a row is killed as hung. 0 disables the check.
func WithHealthInterval(d time.Duration) Option { return func(c *config) { c.healthInterval = d } }

// begin marks a call in flight on p; end must follow.
func (p *Process) begin() {
	p.inflight.Add(1)
	p.lastUse.Store(time.Now().UnixNano())
}

func (p *Process) end() {
	p.lastUse.Store(time.Now().UnixNano())
	p.inflight.Add(-1)
}

// crashError explains a call that failed because its plugin went away. It
// waits briefly for the exit so the status can be reported, and returns
// nil when the process is still alive (the failure was something else).
func (p *Process) crashError() error {
	deadline := time.Now().Add(exitWait)
	for !p.client.Exited() {
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	if p.stopping.Load() && p.hungReason() == "" {
		return nil // stopped by the host, not a crash
	}
	msg := fmt.Sprintf("plugin %q (pid %d) %s", p.Manifest.Plugin.Name, p.pid, p.exitStatus())
	if reason := p.hungReason(); reason != "" {
		msg = fmt.Sprintf("plugin %q (pid %d) was killed: %s", p.Manifest.Plugin.Name, p.pid, reason)
	}
	if t := p.StderrTail(); t != "" {
		msg += "; its stderr ends with:\n" + t
	}
	return fmt.Errorf("%w: %w: %s", component.ErrCrashed, component.ErrTransport, msg)
}

// exitStatus describes how the process ended, once it has.
func (p *Process) exitStatus() string {
	if st := p.cmd.ProcessState; st != nil {
		return "exited: " + st.String()
	}
	return "exited"
}

// health pings the plugin until it stops; two missed pings in a row mean
// it is hung, and it is killed so that its calls fail and the next lookup
// relaunches it.
func (p *Process) health(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	hc := grpc_health_v1.NewHealthClient(p.RPC.Conn)
	missed := 0
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
		_, err := hc.Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "plugin"})
		cancel()
		if err == nil {
			missed = 0
			continue
		}
		if p.client.Exited() {
			return
		}
		if missed++; missed >= healthFailures {
			reason := fmt.Sprintf("health check failed %d times in a row (%v); the plugin is hung", missed, err)
			p.hung.Store(&reason)
			p.kill()
			return
		}
	}
}

// reapIdle stops processes that served nothing for the idle timeout.
func (l *Launcher) reapIdle() {
	t := time.NewTicker(max(l.cfg.idleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
		}
		l.mu.Lock()
		slots := make([]*Slot, 0, len(l.slots))
		for _, s := range l.slots {
			slots = append(slots, s)
		}
		l.mu.Unlock()
		for _, s := range slots {
			s.stopIfIdle(l.cfg.idleTimeout)
		}
	}
}

// stopIfIdle takes an idle process out of the slot, so new calls launch a
// fresh one, and kills it once no call is in flight on it.
func (s *Slot) stopIfIdle(idle time.Duration) {
	p := s.cur.Load()
	if p == nil || p.inflight.Load() > 0 || time.Since(time.Unix(0, p.lastUse.Load())) < idle {
		return
	}
	if !s.cur.CompareAndSwap(p, nil) {
		return
	}
	p.stopping.Store(true)
	for p.inflight.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	p.kill()
}

// crashes tracks recent crashes for backoff and the breaker.
type crashes struct {
	times []time.Time
}

// record notes a crash now and returns how long to wait before the next
// launch, or an error when the breaker opens.
func (c *crashes) record(plugin string, now time.Time) (time.Duration, error) {
	cut := 0
	for cut < len(c.times) && now.Sub(c.times[cut]) > breakerWindow {
		cut++
	}
	c.times = append(c.times[cut:], now)
	if len(c.times) >= breakerCrashes {
		return 0, fmt.Errorf("plugin %q: %w: it crashed %d times within %v, so it is not relaunched; fix the plugin, then restart nexus-host (or call Slot.Reset)",
			plugin, component.ErrCrashLoop, len(c.times), breakerWindow)
	}
	return min(backoffBase<<(len(c.times)-1), backoffMax), nil
}

// Reset closes the breaker and forgets past crashes.
func (s *Slot) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crashes = crashes{}
	s.broken = nil
}

// hungReason is why the health check killed the process, or "".
func (p *Process) hungReason() string {
	if r := p.hung.Load(); r != nil {
		return *r
	}
	return ""
}
