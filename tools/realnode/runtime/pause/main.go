// Command pause is the sandbox process of the real node's pods: it sleeps
// until SIGTERM or SIGINT. Built static (CGO_ENABLED=0) and packed into a
// local image by mkimage, since no registry (and so no registry.k8s.io/pause)
// is reachable here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
