package main

import (
	"fmt"

	"github.com/kquant/kquant/kmeans"
)

// backendFor returns the k-means backend that --backend names. warning,
// if not empty, is said once on stderr (for example when auto falls back
// to the CPU). Results never depend on the backend.
func backendFor(name string) (b kmeans.Backend, warning string, err error) {
	switch name {
	case "auto", "cpu":
		return kmeans.CPU, "", nil
	}
	return nil, "", fmt.Errorf("--backend %q: want auto or cpu", name)
}
