// Command garbage is not a Nexus plugin: it prints noise and exits, the way
// a mistaken binary path would behave.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "garbage: refusing to be a plugin")
	fmt.Println("hello, I am definitely not a plugin")
	os.Exit(3)
}
