package app

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestXvfbScreenshot builds the real app (cgo, OpenGL), runs it under a
// virtual X server on a sample image, waits for its first result, takes a
// screenshot of the screen with xwd and checks that the image area shows
// the picture. It skips when the X server, xwd, ImageMagick or the build
// libraries are missing; on Debian they are the packages xvfb, x11-apps,
// imagemagick, gcc, pkg-config, libgl1-mesa-dev, libx11-dev,
// libxcursor-dev, libxrandr-dev, libxinerama-dev, libxi-dev and
// libxxf86vm-dev.
//
// Set KQUANT_STUDIO_SCREENSHOT to a file name to keep the screenshot.
func TestXvfbScreenshot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the desktop app")
	}
	for _, tool := range []string{"Xvfb", "xwd", "convert", "gcc", "pkg-config", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: install xvfb, x11-apps, imagemagick, gcc and pkg-config", tool)
		}
	}
	libs := []string{"gl", "x11", "xcursor", "xrandr", "xinerama", "xi", "xxf86vm"}
	if out, err := exec.Command("pkg-config", append([]string{"--exists", "--print-errors"}, libs...)...).CombinedOutput(); err != nil {
		t.Skipf("OpenGL/X11 development libraries missing (libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev libxi-dev libxxf86vm-dev): %s", out)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "kquant-studio")
	build := exec.Command("go", "build", "-o", bin, "github.com/kquant/kquant/cmd/kquant-studio")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the app: %v\n%s", err, out)
	}
	sample := writePNG(t, dir, "sample.png", testImage(480, 320, 16))

	// A virtual screen; -displayfd picks a free display number.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	xvfb := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	xvfb.ExtraFiles = []*os.File{w}
	if err := xvfb.Start(); err != nil {
		t.Fatalf("Xvfb: %v", err)
	}
	w.Close()
	defer func() {
		xvfb.Process.Kill()
		xvfb.Wait()
	}()
	num, err := readLine(r, time.Minute)
	if err != nil {
		t.Fatalf("Xvfb did not start: %v", err)
	}
	display := ":" + strings.TrimSpace(num)

	app := exec.Command(bin, sample)
	app.Env = append(os.Environ(), "DISPLAY="+display, "KQUANT_STUDIO_EVENTS=1", "LANG=en_US.UTF-8")
	var stderr bytes.Buffer
	app.Stderr = &stderr
	out, err := app.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		app.Process.Kill()
		app.Wait()
	}()
	result := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.Logf("event: %s", sc.Text())
			if strings.HasPrefix(sc.Text(), "result ") {
				result <- sc.Text()
			}
		}
		close(result)
	}()
	select {
	case line, ok := <-result:
		if !ok {
			t.Fatalf("the app ended before its first result\n%s", stderr.String())
		}
		t.Logf("first result: %s", line)
	case <-time.After(3 * time.Minute): // a hang, not a speed limit
		t.Fatalf("no result\n%s", stderr.String())
	}

	// The result is painted after the event: give it a moment, then look
	// until the image area shows the picture (or give up).
	time.Sleep(time.Second)
	var shot image.Image
	var why string
	for range 40 {
		shot, err = screenshot(display)
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if why = blankness(shot); why == "" {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if p := os.Getenv("KQUANT_STUDIO_SCREENSHOT"); p != "" {
		var buf bytes.Buffer
		png.Encode(&buf, shot)
		os.WriteFile(p, buf.Bytes(), 0o666)
	}
	if why != "" {
		var buf bytes.Buffer
		png.Encode(&buf, shot)
		p := filepath.Join(dir, "shot.png")
		os.WriteFile(p, buf.Bytes(), 0o666)
		t.Fatalf("the preview area is blank: %s (screenshot %s)\n%s", why, p, stderr.String())
	}
}

// readLine reads one line from f within d.
func readLine(f *os.File, d time.Duration) (string, error) {
	ch := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(f).ReadString('\n')
		ch <- l
	}()
	select {
	case l := <-ch:
		if l == "" {
			return "", fmt.Errorf("nothing read")
		}
		return l, nil
	case <-time.After(d):
		return "", fmt.Errorf("timed out")
	}
}

// screenshot captures the whole screen of display.
func screenshot(display string) (image.Image, error) {
	xwd := exec.Command("xwd", "-root", "-silent", "-display", display)
	conv := exec.Command("convert", "xwd:-", "png:-")
	pipe, err := xwd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	conv.Stdin = pipe
	var out, convErr, xwdErr bytes.Buffer
	conv.Stdout, conv.Stderr, xwd.Stderr = &out, &convErr, &xwdErr
	if err := conv.Start(); err != nil {
		return nil, err
	}
	if err := xwd.Run(); err != nil {
		return nil, fmt.Errorf("xwd: %v: %s", err, xwdErr.String())
	}
	if err := conv.Wait(); err != nil {
		return nil, fmt.Errorf("convert: %v: %s", err, convErr.String())
	}
	return png.Decode(&out)
}

// blankness says why the image area of a screenshot (the left 60% of the
// 1280×800 window, below the toolbar) does not show the sample picture,
// or "" if it does: each of its red, green, blue and yellow blocks must
// cover at least 1% of the area.
func blankness(m image.Image) string {
	b := m.Bounds()
	area := image.Rect(b.Min.X, b.Min.Y+80, b.Min.X+b.Dx()*6/10, b.Max.Y-40).Intersect(b)
	targets := []color.NRGBA{{220, 30, 40, 255}, {30, 170, 60, 255}, {40, 60, 200, 255}, {240, 220, 40, 255}}
	counts := make([]int, len(targets))
	for y := area.Min.Y; y < area.Max.Y; y++ {
		for x := area.Min.X; x < area.Max.X; x++ {
			c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
			for i, tc := range targets {
				dr, dg, db := int(c.R)-int(tc.R), int(c.G)-int(tc.G), int(c.B)-int(tc.B)
				if dr*dr+dg*dg+db*db < 40*40 {
					counts[i]++
				}
			}
		}
	}
	n := area.Dx() * area.Dy()
	for i, c := range counts {
		if c*100 < n {
			return fmt.Sprintf("colour %v covers %d of %d pixels", targets[i], c, n)
		}
	}
	return ""
}
