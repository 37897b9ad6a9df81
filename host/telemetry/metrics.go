package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
)

// Metric names.
const (
	MetricCalls    = "nexus.calls"
	MetricErrors   = "nexus.call.errors"
	MetricDuration = "nexus.call.duration"
)

// durationBuckets are the latency histogram's bounds in milliseconds:
// fine below a millisecond, where warm plugin calls live.
var durationBuckets = []float64{0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000}

// Metrics counts calls, errors and latency per component and operation.
type Metrics struct {
	reader   *sdkmetric.ManualReader
	provider *sdkmetric.MeterProvider
	calls    metric.Int64Counter
	errors   metric.Int64Counter
	duration metric.Float64Histogram
}

// NewMetrics returns metrics read on demand (see Stats); extra readers
// (a Prometheus exporter, say) may be added.
func NewMetrics(readers ...sdkmetric.Reader) (*Metrics, error) {
	m := &Metrics{reader: sdkmetric.NewManualReader()}
	opts := []sdkmetric.Option{sdkmetric.WithReader(m.reader)}
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	m.provider = sdkmetric.NewMeterProvider(opts...)
	meter := m.provider.Meter("github.com/nexus-eval/nexus/host")
	var err1, err2, err3 error
	m.calls, err1 = meter.Int64Counter(MetricCalls, metric.WithDescription("calls made to components"))
	m.errors, err2 = meter.Int64Counter(MetricErrors, metric.WithDescription("calls that ended in an error"))
	m.duration, err3 = meter.Float64Histogram(MetricDuration, metric.WithUnit("ms"),
		metric.WithDescription("call latency"), metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return m, nil
}

// Processors returns the metrics processors.
func (m *Metrics) Processors() interface {
	Tools() registry.Processor[component.Tool]
	Agents() registry.Processor[component.Agent]
	Tasks() registry.Processor[component.Task]
} {
	return processors{name: "metrics", make: m.around}
}

func (m *Metrics) around(meta registry.Meta) around {
	sets := map[string]metric.MeasurementOption{}
	for _, op := range []string{OpToolCall, OpAgentRun, OpTaskInstances, OpTaskEvaluate} {
		sets[op] = metric.WithAttributeSet(attribute.NewSet(
			attribute.String("component", meta.Qualified()),
			attribute.String("kind", string(meta.Kind)),
			attribute.String("op", op)))
	}
	return func(ctx context.Context, op string) (context.Context, func(error)) {
		start := time.Now()
		return ctx, func(err error) {
			attrs := sets[op]
			// The caller's context may be cancelled by now; measurements
			// must still count.
			bg := context.WithoutCancel(ctx)
			m.calls.Add(bg, 1, attrs)
			if err != nil {
				m.errors.Add(bg, 1, attrs)
			}
			m.duration.Record(bg, float64(time.Since(start).Microseconds())/1000, attrs)
		}
	}
}

// Stat is the summary of one component operation.
type Stat struct {
	Component string
	Op        string
	Calls     int64
	Errors    int64
	MeanMS    float64
	// P50MS and P99MS are estimated from histogram buckets (upper bound
	// of the bucket holding the quantile).
	P50MS, P99MS float64
}

// Stats reads every metric now, sorted by component and operation.
func (m *Metrics) Stats(ctx context.Context) ([]Stat, error) {
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(ctx, &rm); err != nil {
		return nil, fmt.Errorf("collect metrics: %w", err)
	}
	type key struct{ component, op string }
	stats := map[key]*Stat{}
	get := func(attrs attribute.Set) *Stat {
		c, _ := attrs.Value("component")
		o, _ := attrs.Value("op")
		k := key{c.AsString(), o.AsString()}
		if stats[k] == nil {
			stats[k] = &Stat{Component: k.component, Op: k.op}
		}
		return stats[k]
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch data := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					if mt.Name == MetricCalls {
						get(dp.Attributes).Calls = dp.Value
					} else if mt.Name == MetricErrors {
						get(dp.Attributes).Errors = dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					s := get(dp.Attributes)
					if dp.Count > 0 {
						s.MeanMS = dp.Sum / float64(dp.Count)
					}
					s.P50MS = quantile(dp, 0.50)
					s.P99MS = quantile(dp, 0.99)
				}
			}
		}
	}
	out := make([]Stat, 0, len(stats))
	for _, s := range stats {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Stat) int {
		if a.Component != b.Component {
			if a.Component < b.Component {
				return -1
			}
			return 1
		}
		if a.Op < b.Op {
			return -1
		}
		if a.Op > b.Op {
			return 1
		}
		return 0
	})
	return out, nil
}

func quantile(dp metricdata.HistogramDataPoint[float64], q float64) float64 {
	if dp.Count == 0 {
		return 0
	}
	rank := uint64(q*float64(dp.Count-1)) + 1
	var seen uint64
	for i, c := range dp.BucketCounts {
		seen += c
		if seen >= rank {
			if i < len(dp.Bounds) {
				return dp.Bounds[i]
			}
			if max, ok := dp.Max.Value(); ok {
				return max
			}
			return dp.Bounds[len(dp.Bounds)-1]
		}
	}
	return 0
}

// Shutdown stops the meter provider.
func (m *Metrics) Shutdown(ctx context.Context) error { return m.provider.Shutdown(ctx) }
