package kmeans

import (
	"context"
)

// Nearest returns, for every point, the index of its nearest centroid
// (k·Dim coordinates), ties to the lowest index: the labels of a Lloyd
// assignment, exactly. It uses up to workers goroutines (0: GOMAXPROCS).
func Nearest(pts *Points, centroids []int32, workers int) []int32 {
	return NearestFrom(pts, centroids, nil, workers)
}

// NearestFrom is Nearest with a guess: hint[i], where hint is not nil and
// hint[i] names a centroid, is likely nearest to point i (its cluster's
// centroid, say). The search starts from it and so prunes sooner; the
// labels are Nearest's whatever the hints.
func NearestFrom(pts *Points, centroids []int32, hint []int32, workers int) []int32 {
	if workers <= 0 {
		workers = defaultWorkers()
	}
	if len(centroids) < pts.Dim {
		return make([]int32, pts.Len())
	}
	dim, k := pts.Dim, len(centroids)/pts.Dim
	labels := make([]int32, pts.Len())
	var g geometry
	g.build(centroids, dim, nil, searching, workers)
	forChunks(context.Background(), pts.Len(), workers, func(_, _, lo, hi int) {
		for i := lo; i < hi; i++ {
			x := pts.At(i)
			if hint != nil && hint[i] >= 0 && int(hint[i]) < k {
				a := int(hint[i])
				b, _, _, _ := g.find(x, a, Dist(x, centroidAt(centroids, dim, a)), false)
				labels[i] = int32(b)
				continue
			}
			labels[i] = int32(g.nearest(x))
		}
	})
	return labels
}

// nearest2 labels every point with its nearest centroid and returns, per
// point, the squared distances to the nearest and the second-nearest one.
func nearest2(ctx context.Context, pts *Points, cent []int32, workers int) (labels []int32, d1, d2 []uint64, err error) {
	n, dim := pts.Len(), pts.Dim
	var g geometry
	g.build(cent, dim, nil, searching, workers)
	labels = make([]int32, n)
	d1 = make([]uint64, n)
	d2 = make([]uint64, n)
	err = forChunks(ctx, n, workers, func(_, _, lo, hi int) {
		for i := lo; i < hi; i++ {
			b, a, c, _ := g.search(pts.At(i), -1, 0)
			labels[i], d1[i], d2[i] = int32(b), a, c
		}
	})
	return labels, d1, d2, err
}
