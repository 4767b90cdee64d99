package kquant

import (
	"fmt"
	"math"
	"time"

	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// Report is the per-image report of kquant's front ends: a line of the
// command's --json output (its fields are documented in README.md). Fill
// it with Result.Report; the front end adds what it measured itself
// (decoding, writing, quality timings) and whether it dithered.
type Report struct {
	Input        string         `json:"input"`
	Outputs      []string       `json:"outputs"`
	InputFormat  string         `json:"input_format"`
	Width        int            `json:"width"`
	Height       int            `json:"height"`
	Visible      int            `json:"visible_pixels"`
	UniqueColors int            `json:"unique_colors"`
	KRequested   int            `json:"k_requested"`
	K            int            `json:"k"`
	Note         string         `json:"note,omitempty"` // why K < KRequested
	Space        string         `json:"space"`
	Seed         uint64         `json:"seed"`
	Iterations   int            `json:"iterations"`
	Starts       int            `json:"starts"`
	Converged    bool           `json:"converged"`
	Inertia      float64        `json:"inertia"` // Σ pixels × squared distance, in units of the space
	Quality      ReportQuality  `json:"quality"`
	Palette      []ReportSwatch `json:"palette"`
	TimingsMS    ReportTimings  `json:"timings_ms"`
	Backend      string         `json:"backend"`
	Dither       bool           `json:"dither"`
	Algorithm    string         `json:"algorithm"`     // the assignment algorithm of the last pass (auto: its choice)
	AlgorithmWhy string         `json:"algorithm_why"` // why: "asked for", or auto's reasons and switches
}

// ReportQuality is imgio.Quality rounded, with a PSNR of null (nil) when
// the images are identical.
type ReportQuality struct {
	MSE        float64  `json:"mse"`
	PSNR       *float64 `json:"psnr"`
	DeltaEMean float64  `json:"delta_e_mean"`
	DeltaEP95  float64  `json:"delta_e_p95"`
}

// ReportSwatch is one palette colour of a Report.
type ReportSwatch struct {
	Hex   string   `json:"hex"`
	RGB   [3]uint8 `json:"rgb"`
	Count uint64   `json:"count"`
	Share float64  `json:"share"`
	Fixed bool     `json:"fixed,omitempty"`
}

// ReportTimings are the durations of the stages of one image, in
// milliseconds.
type ReportTimings struct {
	Decode  float64 `json:"decode"`
	Unique  float64 `json:"unique"`
	Cluster float64 `json:"cluster"`
	Map     float64 `json:"map"`
	Output  float64 `json:"output"`
	Quality float64 `json:"quality"`
	Total   float64 `json:"total"`
}

// Milliseconds converts d for ReportTimings, to the microsecond.
func Milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Report returns the report of r for an image read from input (whose
// format was inputFormat) and written to outputs. q, if not nil, is the
// quality of the output. The timings of Cluster's stages are filled in;
// the others are left 0.
func (r *Result) Report(input, inputFormat string, outputs []string, q *imgio.Quality) Report {
	m := r.Model
	rep := Report{
		Input: input, Outputs: outputs, InputFormat: inputFormat,
		Width: r.Colors.Width, Height: r.Colors.Height, Visible: r.Colors.Visible(),
		UniqueColors: r.Colors.Len(), KRequested: r.Requested, K: r.K(),
		Space: string(r.Space), Seed: r.Seed,
		Iterations: m.Iterations, Starts: m.Starts, Converged: m.Converged,
		Inertia: round(float64(m.Inertia)/(kmeans.Scale*kmeans.Scale), 3),
		TimingsMS: ReportTimings{
			Unique: Milliseconds(r.Timings.Unique), Cluster: Milliseconds(r.Timings.Cluster), Map: Milliseconds(r.Timings.Map),
		},
		Backend: m.Backend, Algorithm: m.Algorithm, AlgorithmWhy: m.Why,
	}
	if rep.Outputs == nil {
		rep.Outputs = []string{}
	}
	switch {
	case r.Colors.Len() < r.Requested:
		rep.Note = fmt.Sprintf("the image has only %d distinct colours", r.Colors.Len())
	case r.K() < r.Requested:
		rep.Note = fmt.Sprintf("k-means found %d clusters", r.K())
	}
	if q != nil {
		rep.Quality = ReportQuality{MSE: round(q.MSE, 4), DeltaEMean: round(q.DeltaEMean, 4), DeltaEP95: round(q.DeltaEP95, 4)}
		if !math.IsInf(q.PSNR, 0) {
			p := round(q.PSNR, 4)
			rep.Quality.PSNR = &p
		}
	}
	fixed := map[int]bool{}
	for _, i := range r.Fixed {
		fixed[i] = true
	}
	for i, s := range r.Palette {
		c := s.Color
		rep.Palette = append(rep.Palette, ReportSwatch{
			Hex: fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B), RGB: [3]uint8{c.R, c.G, c.B},
			Count: s.Count, Share: round(r.Palette.Share(i), 6), Fixed: fixed[i],
		})
	}
	return rep
}

// round rounds x to the given number of decimals.
func round(x float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	if v := math.Round(x*p) / p; !math.IsInf(v, 0) && !math.IsNaN(v) {
		return v
	}
	return x
}
