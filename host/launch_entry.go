package host

import (
	"context"

	"github.com/nexus-eval/nexus/host/launch"
	"github.com/nexus-eval/nexus/host/registry"
)

// launchThen is a registry loader that launches (or reuses) the slot's
// process, so a lookup fails early when the plugin cannot start, and then
// returns the component proxy.
func launchThen[T any](slot *launch.Slot, proxy func(string) T, name string) registry.Loader[T] {
	return func(ctx context.Context) (T, error) {
		if _, err := slot.Process(ctx); err != nil {
			var zero T
			return zero, err
		}
		return proxy(name), nil
	}
}
