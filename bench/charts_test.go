package bench

import (
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fallbackWidths are the advance widths (in em) of DejaVu Sans, the font
// Chromium on Linux draws the charts' text in when their Liberation Serif
// is not installed: about a quarter wider than what gonum measures with.
var fallbackWidths = map[rune]float64{
	'a': .613, 'b': .635, 'c': .550, 'd': .635, 'e': .615, 'f': .352, 'g': .635, 'h': .634, 'i': .278, 'j': .278,
	'k': .579, 'l': .278, 'm': .974, 'n': .634, 'o': .612, 'p': .635, 'q': .635, 'r': .411, 's': .521, 't': .392,
	'u': .634, 'v': .592, 'w': .818, 'x': .592, 'y': .592, 'z': .525, ' ': .318, '%': .950, '(': .390, ')': .390,
	'-': .361, '.': .318, ',': .318, '/': .337, ':': .337,
}

// fallbackWidth is how wide the fallback font draws s at size points.
func fallbackWidth(s string, size float64) float64 {
	var em float64
	for _, r := range s {
		switch w, ok := fallbackWidths[r]; {
		case ok:
			em += w
		case r >= '0' && r <= '9':
			em += .636
		default:
			em += .75 // capitals and the rest: on the wide side
		}
	}
	return em * size
}

// eightSetups is a report with the eight setups of make bench, their main
// runs taken from sampleReport's naive (failing) and split.
func eightSetups() *Report {
	r := sampleReport()
	naive, split := r.Setups[0], r.Setups[1]
	r.Setups = nil
	for i, name := range []string{"naive", "enhanced", "immediate", "fair", "split", "batch", "durable", "split-plain"} {
		s := *split
		if i == 0 {
			s = *naive
		}
		s.Setup.Name = name
		r.Setups = append(r.Setups, &s)
	}
	return r
}

var (
	svgText   = regexp.MustCompile(`<text x="([-\d.]+)" y="([-\d.]+)"[^>]*font-size:([\d.]+)px">([^<]*)</text>`)
	svgMarker = regexp.MustCompile(`<path d="M([-\d.]+),([-\d.]+)A([\d.]+),[\d.]+ 0 1 1 ([-\d.]+),[-\d.]+A[^"]*Z" style="fill:(#[0-9A-F]{6})"`)
	svgHeight = regexp.MustCompile(`viewBox="0 0 [\d.]+ ([\d.]+)"`)
	svgYLabel = regexp.MustCompile(`<g transform="rotate\(90\)">\s*<text[^>]*font-size:([\d.]+)px">([^<]*)</text>`)
)

// setupMarkers are the chart's circle markers but the legend's.
func setupMarkers(svg string) [][]string {
	var out [][]string
	for _, m := range svgMarker.FindAllStringSubmatch(svg, -1) {
		if m[5] != hexColor(legendGrey) {
			out = append(out, m)
		}
	}
	return out
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

// TestChartMarkersClearOfNames: in the per-setup charts, no marker covers
// a setup's name, even a marker at zero and a name drawn in a font about a
// quarter wider than the one the chart was laid out with.
func TestChartMarkersClearOfNames(t *testing.T) {
	r := eightSetups()
	charts, err := r.charts()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range r.Setups {
		names[s.Setup.Name] = true
	}
	for _, c := range charts {
		if c.File != "throughput.svg" && c.File != "errors.svg" {
			continue
		}
		svg := string(c.SVG)
		markers := setupMarkers(svg)
		if len(markers) != len(r.Setups) {
			t.Fatalf("%s: %d markers, want %d", c.File, len(markers), len(r.Setups))
		}
		for _, m := range svgText.FindAllStringSubmatch(svg, -1) {
			if !names[m[4]] {
				continue
			}
			right := atof(t, m[1]) + fallbackWidth(m[4], atof(t, m[3]))
			for _, mk := range markers {
				left := atof(t, mk[4]) // the circle's leftmost point
				if left < right {
					t.Errorf("%s: a marker at x=%.1f covers the name %q, which may reach x=%.1f", c.File, left, m[4], right)
				}
			}
		}
	}
}

// TestChartYLabelsFit: every chart is tall enough for its y axis label,
// drawn in a font about a quarter wider than measured, beside the title and the x
// axis (in the fallback font, the per-setup latency charts cut it at 2.6
// inches).
func TestChartYLabelsFit(t *testing.T) {
	charts, err := eightSetups().charts()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		svg := string(c.SVG)
		h := svgHeight.FindStringSubmatch(svg)
		l := svgYLabel.FindStringSubmatch(svg)
		if h == nil || l == nil {
			continue // the per-setup rows have no y label
		}
		need := fallbackWidth(l[2], atof(t, l[1])) + float64(chartFrame)
		if height := atof(t, h[1]); height < need {
			t.Errorf("%s: %.0f pt high, its y label %q needs %.0f", c.File, height, l[2], need)
		}
	}
}

// TestSetupColours: each setup has one colour, the same in every chart,
// and the eight setups of make bench have clearly different hues.
func TestSetupColours(t *testing.T) {
	hue := func(c color.RGBA) float64 {
		r, g, b := float64(c.R)/255, float64(c.G)/255, float64(c.B)/255
		hi, lo := math.Max(r, math.Max(g, b)), math.Min(r, math.Min(g, b))
		var h float64
		switch hi {
		case r:
			h = math.Mod((g-b)/(hi-lo), 6)
		case g:
			h = (b-r)/(hi-lo) + 2
		default:
			h = (r-g)/(hi-lo) + 4
		}
		return math.Mod(60*h+360, 360)
	}
	for i, a := range setupColors {
		for j, b := range setupColors[:i] {
			d := math.Abs(hue(a) - hue(b))
			if d = math.Min(d, 360-d); d < 25 {
				t.Errorf("setup colours %d (%s) and %d (%s) are %.0f° apart, want at least 25°", j, hexColor(b), i, hexColor(a), d)
			}
		}
	}

	// A setup keeps its colour where another setup is left out of a chart:
	// here the first setup has no sweep.
	r := eightSetups()
	first := *r.Setups[0]
	first.Sweep = nil
	r.Setups[0] = &first
	charts, err := r.charts()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		svg := string(c.SVG)
		switch {
		case c.File == "errors.svg" || c.File == "throughput.svg":
			markers := setupMarkers(svg)
			// Drawn top to bottom: the report's first setup first.
			for i, m := range markers {
				if want := hexColor(setupColor(i)); m[5] != want {
					t.Errorf("%s: setup %d's marker is %s, want %s", c.File, i, m[5], want)
				}
			}
		case strings.HasPrefix(c.File, "sweep-"):
			if strings.Contains(svg, "stroke:"+hexColor(setupColor(0))) {
				t.Errorf("%s: the first setup's colour, though it has no sweep", c.File)
			}
			for i := 1; i < len(r.Setups); i++ {
				if !strings.Contains(svg, "stroke:"+hexColor(setupColor(i))) {
					t.Errorf("%s: no line in setup %d's colour %s", c.File, i, hexColor(setupColor(i)))
				}
			}
		case strings.HasPrefix(c.File, "latency-"):
			name := strings.TrimSuffix(strings.TrimPrefix(c.File, "latency-"), ".svg")
			for i, s := range r.Setups {
				if fileName(s.Setup.Name) == name && !strings.Contains(svg, "stroke:"+hexColor(setupColor(i))) {
					t.Errorf("%s: not in %s's colour %s", c.File, s.Setup.Name, hexColor(setupColor(i)))
				}
			}
		}
	}
}
