package kmeans_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// TestDedupIsExact proves on real images that k-means on the distinct
// colours, weighted by their pixel counts, gives the labels, centroids and
// inertia of k-means on every pixel, from the same start, in RGB and Lab.
func TestDedupIsExact(t *testing.T) {
	for _, file := range []string{"testdata/graf1-crop.png", "testdata/onestandsout-small.png"} {
		img, _, err := imgio.Load(file, imgio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		colors := imgio.Unique(img)
		for _, space := range []imgio.Space{imgio.RGB, imgio.Lab} {
			dedup := colors.Points(space)
			pixels := imgio.PixelPoints(img, space)
			for _, k := range []int{2, 16, 64} {
				// start from k-means++ on the distinct colours
				seed, err := kmeans.Run(context.Background(), dedup, kmeans.Config{K: k, Seed: 1, MaxIter: 1, Starts: 1, Breathe: -1, Coarse: -1}, nil)
				if err != nil {
					t.Fatal(err)
				}
				cfg := kmeans.Config{K: seed.K(), Init: kmeans.InitGiven, Centroids: seed.Centroids}
				a, err := kmeans.Run(context.Background(), dedup, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := kmeans.Run(context.Background(), pixels, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(a.Centroids, b.Centroids) || a.Inertia != b.Inertia || !slices.Equal(a.Counts, b.Counts) || a.Iterations != b.Iterations {
					t.Fatalf("%s %s k=%d: distinct colours give inertia %d in %d iterations, pixels %d in %d", file, space, k, a.Inertia, a.Iterations, b.Inertia, b.Iterations)
				}
				// every pixel's label is its colour's label
				p := 0
				for _, ci := range colors.Index {
					if ci < 0 {
						continue
					}
					if b.Labels[p] != a.Labels[ci] {
						t.Fatalf("%s %s k=%d: pixel %d labelled %d, its colour %d", file, space, k, p, b.Labels[p], a.Labels[ci])
					}
					p++
				}
			}
		}
	}
}
