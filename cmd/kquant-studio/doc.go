// Command kquant-studio is kquant's desktop app: open an image, choose k,
// the colour space and the mode (quantize, segment, palette), and watch
// k-means converge in a live preview before exporting what the kquant
// command writes.
//
// Usage:
//
//	kquant-studio [image]
//
// The window, its controls and their behaviour live in package app; this
// is the wiring only. Set KQUANT_STUDIO_EVENTS=1 to print one line per
// event (image loaded, preview frame, result, error) on stdout.
package main
