package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loremnews/loremnews/load"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chart is one SVG chart of a report: a file of its own beside report.md
// (which embeds it by name), inlined in report.html.
type chart struct {
	File  string // file name, e.g. "throughput.svg"
	Title string
	Note  string
	SVG   []byte
}

// WriteCharts writes every chart of the report into dir as its own SVG file.
func (r *Report) WriteCharts(dir string) error {
	charts, err := r.charts()
	if err != nil {
		return err
	}
	for _, c := range charts {
		if err := os.WriteFile(filepath.Join(dir, c.File), c.SVG, 0o644); err != nil {
			return fmt.Errorf("bench: write chart: %w", err)
		}
	}
	return nil
}

// Chart sizes: wide enough for a legend beside the plot, small enough to
// read on a laptop without scrolling. chartFrame is what a chart's title
// and x axis (its ticks, labels and label) take of its height.
const (
	chartWidth  = 8 * vg.Inch
	chartHeight = 3.6 * vg.Inch
	smallHeight = 2.6 * vg.Inch
	chartFrame  = 0.9 * vg.Inch
)

// setupColors are the setups' colours, in the order of the report's
// setups, the same in every chart: hues at least 25° apart, so that no
// two setups read as the same colour (the ninth setup on reuses them,
// with the line's dashes to tell it apart).
var setupColors = []color.RGBA{
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0xa8, 0xa8, 0x10, 0xff}, // olive
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0x0f, 0x9d, 0x8a, 0xff}, // teal
	{0x1f, 0x5f, 0xd4, 0xff}, // blue
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0xe3, 0x77, 0xc2, 0xff}, // pink
}

// legendGrey draws a legend's marks that stand for every setup's.
var legendGrey = color.Gray{Y: 90}

// setupColor is the colour of the report's i-th setup.
func setupColor(i int) color.Color { return setupColors[i%len(setupColors)] }

// setupLineStyle is the line of the report's i-th setup: its colour, and
// dashes that tell the lines apart where colour cannot (in print, or for
// a reader who does not see the difference).
func setupLineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: setupColor(i), Width: vg.Points(1.2), Dashes: plotutil.Dashes(i)}
}

// setupLine is one setup's line in a chart: i is the setup's place in the
// report, which picks its colour whichever setups the chart leaves out.
type setupLine struct {
	i    int
	name string
	pts  plotter.XYs
}

// addSetupLines adds each setup's line (and with points, a marker at each
// point) in the setup's own style, with a legend entry.
func addSetupLines(p *plot.Plot, lines []setupLine, points bool) error {
	for _, sl := range lines {
		l, err := plotter.NewLine(sl.pts)
		if err != nil {
			return err
		}
		l.LineStyle = setupLineStyle(sl.i)
		p.Add(l)
		if !points {
			p.Legend.Add(sl.name, l)
			continue
		}
		sc, err := plotter.NewScatter(sl.pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: setupColor(sl.i), Radius: vg.Points(2.5), Shape: plotutil.Shape(sl.i)}
		p.Add(sc)
		p.Legend.Add(sl.name, l, sc)
	}
	return nil
}

func (r *Report) charts() ([]chart, error) {
	var out []chart
	add := func(c chart, err error) error {
		if err != nil {
			return err
		}
		if c.SVG != nil {
			out = append(out, c)
		}
		return nil
	}
	c := r.Config
	steps := []func() (chart, error){
		func() (chart, error) {
			return r.mainRunsChart("throughput.svg", fmt.Sprintf("Successful req/s per setup: %s at c=%d", c.Action, c.Concurrency),
				"successful req/s", func(run RunResult) float64 { return run.OKPerSec() }, false)
		},
		func() (chart, error) {
			return r.mainRunsChart("errors.svg", fmt.Sprintf("Failed requests per setup: %s at c=%d", c.Action, c.Concurrency),
				"failed requests (%)", func(run RunResult) float64 { return 100 * run.ErrorRate() }, true)
		},
		r.latencyAllChart,
		func() (chart, error) {
			return r.timelineChart("timeline-throughput.svg", "Successful req/s second by second, main runs end to end", "successful req/s",
				func(p timelinePoint) (float64, bool) { return float64(p.Successes), true }, false)
		},
		func() (chart, error) {
			return r.timelineChart("timeline-p99.svg", "p99 latency second by second, main runs end to end", "p99 of successful requests (ms)",
				func(p timelinePoint) (float64, bool) { return 1000 * p.P99, p.Successes > 0 }, false)
		},
		func() (chart, error) {
			return r.timelineChart("timeline-errors.svg", "Failed requests second by second, main runs end to end", "failed requests per second",
				func(p timelinePoint) (float64, bool) { return float64(p.Failures), true }, true)
		},
	}
	if len(c.Sweep) > 1 {
		steps = append(steps,
			func() (chart, error) {
				return r.sweepChart("sweep-throughput.svg", "Successful req/s against concurrency", "successful req/s",
					func(run RunResult) float64 { return run.OKPerSec() }, false)
			},
			func() (chart, error) {
				return r.sweepChart("sweep-p99.svg", "p99 latency of successful requests against concurrency", "p99 (ms)",
					func(run RunResult) float64 { return 1000 * run.Percentile(99) }, false)
			},
			func() (chart, error) {
				return r.sweepChart("sweep-errors.svg", "Failed requests against concurrency", "failed requests (%)",
					func(run RunResult) float64 { return 100 * run.ErrorRate() }, true)
			})
	}
	for _, step := range steps {
		if err := add(step()); err != nil {
			return nil, err
		}
	}
	per, err := r.latencySetupCharts()
	if err != nil {
		return nil, err
	}
	return append(out, per...), nil
}

// mainRunsChart draws one value of the main runs per setup, a row each
// (names read across, however many setups): the mean as a point, the
// spread of the runs as a min–max bar. With onlyIfAny, a chart whose
// values are all zero is left out.
func (r *Report) mainRunsChart(file, title, xlabel string, value func(RunResult) float64, onlyIfAny bool) (chart, error) {
	var names []string
	var pts spreadPoints
	var colors []color.Color
	any := false
	for i, s := range r.Setups {
		if len(s.Runs) == 0 {
			continue
		}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, run := range s.Runs {
			v := value(run)
			lo, hi, sum = math.Min(lo, v), math.Max(hi, v), sum+v
		}
		any = any || hi > 0
		pts = append(pts, spreadPoint{mean: sum / float64(len(s.Runs)), row: float64(len(names)), lo: lo, hi: hi})
		names = append(names, s.Setup.Name)
		colors = append(colors, setupColor(i))
	}
	if len(pts) == 0 || onlyIfAny && !any {
		return chart{}, nil
	}
	// The first setup on top.
	for i := range pts {
		pts[i].row = float64(len(pts)-1) - pts[i].row
	}
	reversed := make([]string, len(names))
	for i, n := range names {
		reversed[len(names)-1-i] = n
	}
	p := newPlot(title, xlabel, "")
	// A point and a bar per setup, in the setup's colour in every chart.
	for i := range pts {
		sc, err := plotter.NewScatter(pts[i : i+1])
		if err != nil {
			return chart{}, err
		}
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(3.5)
		sc.GlyphStyle.Color = colors[i]
		p.Add(sc)
		if r.Config.Runs > 1 {
			bars, err := plotter.NewXErrorBars(pts[i : i+1])
			if err != nil {
				return chart{}, err
			}
			bars.CapWidth = vg.Points(8)
			bars.LineStyle.Color = colors[i]
			p.Add(bars)
		}
	}
	// The legend explains the marks in grey: the colours are the setups'.
	p.Legend.Add("mean", glyphThumbnail(draw.GlyphStyle{Shape: draw.CircleGlyph{}, Radius: vg.Points(3.5), Color: legendGrey}))
	if r.Config.Runs > 1 {
		p.Legend.Add(fmt.Sprintf("min–max of %d runs", r.Config.Runs), barThumbnail(draw.LineStyle{Color: legendGrey, Width: vg.Points(1)}))
	}
	p.NominalY(reversed...)
	// A browser may draw the names in a wider font than gonum measured
	// them in, and they are right-aligned by their measured width, so a
	// wider name runs to the right: keep a quarter of the longest name
	// free between the names and a point at zero.
	var longest vg.Length
	for _, n := range names {
		longest = max(longest, p.Y.Tick.Label.Width(n))
	}
	p.Y.Padding = max(p.Y.Padding, longest/4+vg.Points(4))
	p.Y.Min, p.Y.Max = -0.6, float64(len(names))-0.4
	p.X.Min = 0
	if p.X.Max <= 0 {
		p.X.Max = 1
	}
	p.X.Max *= 1.08
	p.X.Tick.Marker = fixedTicks{}
	height := max(smallHeight, vg.Length(len(names))*0.32*vg.Inch+0.9*vg.Inch)
	svg, err := render(p, height)
	return chart{File: file, Title: title, SVG: svg,
		Note: fmt.Sprintf("Each point is the mean of a setup's %d main runs of %s; the bar spans the lowest and the highest run.", r.Config.Runs, r.Config.Duration)}, err
}

// glyphThumbnail shows a marker in a legend.
type glyphThumbnail draw.GlyphStyle

func (g glyphThumbnail) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle(g), c.Center())
}

// barThumbnail shows an error bar in a legend: a short horizontal line.
type barThumbnail draw.LineStyle

func (b barThumbnail) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(draw.LineStyle(b), c.Min.X, y, c.Max.X, y)
}

// spreadPoint is a mean, drawn in a row, with the lowest and highest value
// it averages.
type spreadPoint struct{ mean, row, lo, hi float64 }

type spreadPoints []spreadPoint

func (s spreadPoints) Len() int                    { return len(s) }
func (s spreadPoints) XY(i int) (float64, float64) { return s[i].mean, s[i].row }
func (s spreadPoints) XError(i int) (float64, float64) {
	return s[i].mean - s[i].lo, s[i].hi - s[i].mean
}

// timelinePoint is one second of one run.
type timelinePoint = load.TimelinePoint

// timelineChart draws a per-second value over the main runs, one run after
// the other, a line per setup. Seconds after a run's window (requests that
// were in flight when it closed) are left out: they are not a full second.
func (r *Report) timelineChart(file, title, ylabel string, value func(timelinePoint) (float64, bool), onlyIfAny bool) (chart, error) {
	window := int(math.Max(1, math.Round(r.Config.Duration.Seconds())))
	var lines []setupLine
	any := false
	for si, s := range r.Setups {
		var pts plotter.XYs
		for i, run := range s.Runs {
			for _, tp := range run.Timeline {
				if tp.Second >= window {
					continue
				}
				if v, ok := value(tp); ok {
					pts = append(pts, plotter.XY{X: float64(i*window+tp.Second) + 0.5, Y: v})
					any = any || v > 0
				}
			}
		}
		if len(pts) > 0 {
			lines = append(lines, setupLine{si, s.Setup.Name, pts})
		}
	}
	if len(lines) == 0 || onlyIfAny && !any {
		return chart{}, nil
	}
	p := newPlot(title, "seconds into the main runs", ylabel)
	if err := addSetupLines(p, lines, false); err != nil {
		return chart{}, err
	}
	for i := 1; i < r.Config.Runs; i++ {
		p.Add(runBoundary(float64(i * window)))
	}
	p.X.Min, p.X.Max = 0, float64(r.Config.Runs*window)
	fromZero(p)
	p.X.Tick.Marker = fixedTicks{}
	p.Y.Tick.Marker = fixedTicks{}
	svg, err := render(p, chartHeight)
	return chart{File: file, Title: title, SVG: svg,
		Note: fmt.Sprintf("Each point is one second of a run, by the time requests finished; the %d runs of %s follow one another (dotted lines between them).",
			r.Config.Runs, r.Config.Duration)}, err
}

// runBoundary is a dotted vertical line at x across the plot.
type runBoundary float64

func (x runBoundary) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	at := trX(float64(x))
	c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 150}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}},
		at, c.Min.Y, at, c.Max.Y)
}

// sweepChart draws one value per concurrency level, a line per setup.
func (r *Report) sweepChart(file, title, ylabel string, value func(RunResult) float64, onlyIfAny bool) (chart, error) {
	var lines []setupLine
	any := false
	for si, s := range r.Setups {
		var pts plotter.XYs
		for _, run := range s.Sweep {
			if v := value(run); !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: float64(run.Concurrency), Y: v})
				any = any || v > 0
			}
		}
		if len(pts) > 0 {
			lines = append(lines, setupLine{si, s.Setup.Name, pts})
		}
	}
	if len(lines) == 0 || onlyIfAny && !any {
		return chart{}, nil
	}
	p := newPlot(title, "concurrent connections", ylabel)
	if err := addSetupLines(p, lines, true); err != nil {
		return chart{}, err
	}
	levels := r.Config.Sweep
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = levelTicks(levels)
	// A margin on both sides, so the first and last labels are not cut.
	p.X.Min, p.X.Max = float64(levels[0])/1.4, float64(levels[len(levels)-1])*1.4
	fromZero(p)
	p.Y.Tick.Marker = fixedTicks{}
	svg, err := render(p, chartHeight)
	return chart{File: file, Title: title, SVG: svg,
		Note: fmt.Sprintf("One %s run per level; x axis logarithmic.", r.Config.SweepDuration)}, err
}

// Latency distributions are drawn on a common logarithmic grid of buckets
// gridFactor apart from gridStart, so setups compare bucket by bucket.
const (
	gridStart  = 50e-6 // seconds
	gridFactor = 1.25
)

// latencyPoints is a setup's latency distribution over its main runs: the
// share of successful responses (%) in each grid bucket, x in seconds.
func latencyPoints(s *SetupResult) plotter.XYs {
	counts := map[int]float64{}
	var total float64
	for _, run := range s.Runs {
		for _, b := range run.LogHistogram {
			i := int(math.Ceil(math.Log(math.Max(b.UpperSeconds, gridStart)/gridStart) / math.Log(gridFactor)))
			counts[i] += float64(b.Count)
			total += float64(b.Count)
		}
	}
	if total == 0 {
		return nil
	}
	lo, hi := math.MaxInt, math.MinInt
	for i := range counts {
		lo, hi = min(lo, i), max(hi, i)
	}
	var pts plotter.XYs
	for i := lo; i <= hi; i++ {
		pts = append(pts, plotter.XY{X: gridStart * math.Pow(gridFactor, float64(i)), Y: 100 * counts[i] / total})
	}
	return pts
}

// latencyAxes are the ranges every latency chart of a report shares, so
// the per-setup charts compare by eye.
func (r *Report) latencyAxes() (xmin, xmax, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, s := range r.Setups {
		for _, pt := range latencyPoints(s) {
			xmin, xmax, ymax = math.Min(xmin, pt.X), math.Max(xmax, pt.X), math.Max(ymax, pt.Y)
		}
	}
	return xmin / 1.5, xmax * 1.5, ymax * 1.08
}

func latencyPlot(title string, xmin, xmax, ymax float64) *plot.Plot {
	p := newPlot(title, "latency (log scale)", "% of successful responses")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = durationTicks{}
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = 0, ymax
	p.Y.Tick.Marker = fixedTicks{}
	return p
}

// latencyAllChart draws every setup's latency distribution on one chart.
func (r *Report) latencyAllChart() (chart, error) {
	var lines []setupLine
	for i, s := range r.Setups {
		if pts := latencyPoints(s); pts != nil {
			lines = append(lines, setupLine{i, s.Setup.Name, pts})
		}
	}
	if len(lines) == 0 {
		return chart{}, nil
	}
	xmin, xmax, ymax := r.latencyAxes()
	title := fmt.Sprintf("Latency distribution of successful requests: %s at c=%d", r.Config.Action, r.Config.Concurrency)
	p := latencyPlot(title, xmin, xmax, ymax)
	if err := addSetupLines(p, lines, false); err != nil {
		return chart{}, err
	}
	svg, err := render(p, chartHeight)
	return chart{File: "latency.svg", Title: title, SVG: svg,
		Note: "Each line is one setup's successful responses over its main runs, in buckets 1.25× apart; x axis logarithmic. A long right tail is the slow requests."}, err
}

// latencySetupCharts draws each setup's distribution on its own, all on
// the same axes.
func (r *Report) latencySetupCharts() ([]chart, error) {
	xmin, xmax, ymax := r.latencyAxes()
	var out []chart
	for i, s := range r.Setups {
		pts := latencyPoints(s)
		if pts == nil {
			continue
		}
		_, lat, _ := meanRun(s.Runs)
		title := fmt.Sprintf("%s: p50 %s, p99 %s, slowest %s", s.Setup.Name, fmtSeconds(lat[1]), fmtSeconds(lat[3]), fmtSeconds(lat[5]))
		p := latencyPlot(title, xmin, xmax, ymax)
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle = setupLineStyle(i)
		p.Add(l)
		svg, err := render(p, smallHeight)
		if err != nil {
			return nil, err
		}
		out = append(out, chart{File: "latency-" + fileName(s.Setup.Name) + ".svg", Title: "Latency distribution: " + s.Setup.Name, SVG: svg,
			Note: "Means of the main runs in the title. Same axes as every setup's chart in this report."})
	}
	return out, nil
}

// fileName keeps a setup's name safe as part of a file name.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
}

func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.BackgroundColor = color.White
	p.Add(plotter.NewGrid())
	return p
}

// fromZero starts the y axis at zero (a rate or a latency drawn from a
// higher floor exaggerates differences) with a little headroom on top.
func fromZero(p *plot.Plot) {
	p.Y.Min = 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.08
}

// render draws p as SVG with its legend to the right of the plot, where it
// covers no data.
func render(p *plot.Plot, height vg.Length) ([]byte, error) {
	// The y label runs along the plot's height; drawn in a browser's
	// fallback font, about a quarter wider than measured (DejaVu Sans
	// against Liberation Serif), it must still fit beside the title and the
	// x axis, or its ends are cut.
	if l := p.Y.Label; l.Text != "" {
		height = max(height, l.TextStyle.Width(l.Text)*1.3+chartFrame)
	}
	c := vgsvg.New(chartWidth, height)
	dc := draw.New(c)
	legend := p.Legend
	p.Legend = plot.NewLegend() // empty: Plot.Draw draws no legend over the data
	// A quarter more than gonum measures: a browser may draw the text in a
	// wider fallback font than the one measured.
	var legendWidth vg.Length
	if r := legend.Rectangle(dc); r.Max.X > r.Min.X {
		legendWidth = (r.Max.X-r.Min.X)*1.25 + 0.3*vg.Inch
	}
	// A little room left of the y labels, above the title and right of the
	// last x label.
	p.Draw(draw.Crop(dc, 0.12*vg.Inch, -legendWidth-0.1*vg.Inch, 0, -0.05*vg.Inch))
	if legendWidth > 0 {
		legend.Top, legend.Left = true, true
		legend.Draw(draw.Crop(dc, chartWidth-legendWidth+0.15*vg.Inch, 0, 0, -0.45*vg.Inch))
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// levelTicks labels exactly the sweep's concurrency levels.
type levelTicks []int

func (l levelTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, v := range l {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: strconv.Itoa(v)})
	}
	return ticks
}

// fixedTicks are gonum's default ticks, all labelled with the same number
// of decimals (the fewest that shows each exactly), so an axis never mixes
// "0.5" with "1" or "1e+04".
type fixedTicks struct{}

func (fixedTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	decimals := 0
	for _, t := range ticks {
		if t.Label == "" {
			continue
		}
		for decimals < 3 && math.Abs(t.Value*math.Pow10(decimals)-math.Round(t.Value*math.Pow10(decimals))) > 1e-6 {
			decimals++
		}
	}
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', decimals, 64)
		}
	}
	return ticks
}

// durationTicks label a logarithmic axis of seconds as durations (100 µs,
// 1 ms, 10 ms, …) at each power of ten, and at 2 and 5 times it too when
// the axis spans fewer than three decades.
type durationTicks struct{}

func (durationTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	dense := math.Log10(hi/lo) < 3
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		v := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			mv := m * v
			if mv < lo || mv > hi {
				continue
			}
			t := plot.Tick{Value: mv} // minor
			if m == 1 || dense && (m == 2 || m == 5) {
				t.Label = fmtTickDuration(mv)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// fmtTickDuration shows a round number of seconds as a duration.
func fmtTickDuration(s float64) string {
	switch {
	case s < 1e-3:
		return strconv.FormatFloat(math.Round(s*1e7)/10, 'f', -1, 64) + " µs"
	case s < 1:
		return strconv.FormatFloat(math.Round(s*1e4)/10, 'f', -1, 64) + " ms"
	default:
		return strconv.FormatFloat(math.Round(s*10)/10, 'f', -1, 64) + " s"
	}
}
