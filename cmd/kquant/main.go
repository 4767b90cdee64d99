// Command kquant clusters the colours of images with exact, deterministic
// k-means.
//
// Usage:
//
//	kquant quantize [flags] INPUT...   reduce images to k colours
//	kquant palette  [flags] INPUT...   extract the k dominant colours
//	kquant segment  [flags] INPUT...   split images into k colour clusters
//	kquant devices
//	kquant bench    [flags] [IMAGE...]  time the k-means algorithms
//	kquant version
//
// Inputs are image files (PNG, JPEG, GIF, BMP, TIFF, WebP), globs, or
// directories (-r recurses). Run "kquant help COMMAND" for the flags of a
// command. Exit status: 0 when every input succeeded, 1 when some failed
// (the others are still done, and each failure is named on stderr), 2 for
// a mistake on the command line.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// version is the release, set with -ldflags "-X main.version=v1.2.3";
// empty means the module version from the build information.
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs kquant with args (without the program name) and returns the
// exit status. term, if not nil, is the file behind stderr, where a
// progress bar may show.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, term *os.File) int {
	cfg, err := parseArgs(args)
	if err != nil {
		var ue *usageError
		var help errHelp
		var ba benchArgs
		switch {
		case errors.As(err, &ba):
			return runBench(ctx, ba.args, stdout, stderr)
		case errors.As(err, &help):
			usage(stdout, help.cmd)
			return exitOK
		case errors.Is(err, errVersion):
			fmt.Fprintln(stdout, versionString())
			return exitOK
		case errors.Is(err, errDevices):
			return listDevices(stdout, stderr)
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "kquant: %s\n", ue.msg)
			if ue.cmd != "" {
				fmt.Fprintf(stderr, "Run 'kquant help %s' for usage.\n", ue.cmd)
			} else {
				fmt.Fprintf(stderr, "Run 'kquant help' for usage.\n")
			}
			return exitUsage
		}
		fmt.Fprintf(stderr, "kquant: %v\n", err)
		return exitUsage
	}
	return execute(ctx, cfg, stdout, stderr, term)
}

func versionString() string {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if bi.Main.Version != "" {
				v = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && len(s.Value) >= 12 {
					v += " " + s.Value[:12]
				}
			}
		}
	}
	return fmt.Sprintf("kquant %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
