// Command hang never completes the go-plugin handshake.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	fmt.Fprintln(os.Stderr, "hang: sleeping instead of serving")
	time.Sleep(time.Hour)
}
