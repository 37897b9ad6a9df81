// Package sdk is what a Nexus plugin author imports: typed handlers for
// agents, tools and tasks, with JSON Schemas inferred from Go types, and
// [Serve], which hides the go-plugin handshake.
//
// A complete tool plugin:
//
//	package main
//
//	import (
//		"context"
//		"strings"
//
//		"github.com/nexus-eval/nexus/sdk"
//	)
//
//	type In struct {
//		Text string `json:"text" jsonschema:"the text to shout"`
//	}
//
//	type Out struct {
//		Text string `json:"text"`
//	}
//
//	func shout(_ context.Context, in In) (Out, error) {
//		return Out{Text: strings.ToUpper(in.Text)}, nil
//	}
//
//	func main() {
//		sdk.Serve(sdk.Plugin{Name: "shout", Version: "0.1.0"},
//			sdk.Tool("shout", "Upper-cases text", shout))
//	}
//
// Build it, let the binary write its own manifest, and the host finds it:
//
//	go build -o plugins/tools/shout/shout .
//	nexus-host plugins manifest plugins/tools/shout
//	nexus-host call shout '{"text":"hi"}'
//
// A handler returns an [*Error] (see [Errorf]) for a domain failure such as
// bad input; any other error is reported with code [CodeFailed]. A panic in
// a handler is recovered and reported with code [CodePanic].
package sdk
