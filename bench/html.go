package bench

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WriteHTML writes a self-contained HTML report: the same tables as the
// Markdown, and SVG charts drawn by gonum/plot, inlined (no scripts, no CDN).
func (r *Report) WriteHTML(w io.Writer) error {
	charts, err := r.charts()
	if err != nil {
		return err
	}
	return htmlReport.Execute(w, struct {
		Title       string
		Intro       []string
		CommandLine string
		Tables      []table
		Charts      []chart
		Setups      []string
	}{r.Title(), r.intro(), r.CommandLine, r.tables(), charts, r.setupLines()})
}

type chart struct {
	Title string
	Note  string
	SVG   template.HTML
}

func (r *Report) charts() ([]chart, error) {
	out, err := r.latencyCharts()
	if err != nil {
		return nil, err
	}
	if len(r.Config.Sweep) > 1 {
		for _, spec := range []struct {
			title, ylabel string
			logY          bool
			value         func(Run) float64
		}{
			{"Requests per second against concurrency", "requests/sec", false, func(r Run) float64 { return r.RequestsPerSec }},
			{"p99 latency against concurrency", "p99 latency (ms)", true, func(r Run) float64 { return r.Percentile(99) * 1000 }},
		} {
			p := plot.New()
			p.Title.Text = spec.title
			p.X.Label.Text = "concurrent connections"
			p.Y.Label.Text = spec.ylabel
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = levelTicks(r.Config.Sweep)
			if spec.logY {
				p.Y.Scale = plot.LogScale{}
				p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			}
			var lines []any
			for _, s := range r.Setups {
				var pts plotter.XYs
				for _, run := range s.Sweep {
					if v := spec.value(run); v > 0 && !math.IsNaN(v) {
						pts = append(pts, plotter.XY{X: float64(run.Concurrency), Y: v})
					}
				}
				if len(pts) > 0 {
					lines = append(lines, s.Setup.Name, pts)
				}
			}
			if len(lines) == 0 {
				continue
			}
			if err := plotutil.AddLinePoints(p, lines...); err != nil {
				return nil, err
			}
			svg, err := toSVG(p, 3.6*vg.Inch)
			if err != nil {
				return nil, err
			}
			out = append(out, chart{Title: spec.title, SVG: svg,
				Note: fmt.Sprintf("One %s run per level; x axis logarithmic.", r.Config.SweepDuration)})
		}
	}
	return out, nil
}

// Latency distributions are drawn on a common logarithmic grid of buckets
// gridFactor apart from gridStart, so setups compare bucket by bucket.
const (
	gridStart  = 50e-6 // seconds
	gridFactor = 1.25
)

// latencyPoints is a setup's latency distribution over its main runs: the
// share of responses (%) in each grid bucket, x in milliseconds.
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
		pts = append(pts, plotter.XY{X: gridStart * math.Pow(gridFactor, float64(i)) * 1000, Y: 100 * counts[i] / total})
	}
	return pts
}

func latencyPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "latency (ms)"
	p.Y.Label.Text = "% of responses"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	return p
}

// latencyCharts draws all setups' latency distributions on one chart, then
// each setup's on its own.
func (r *Report) latencyCharts() ([]chart, error) {
	all := latencyPlot("Latency distribution (main runs)")
	var lines []any
	for _, s := range r.Setups {
		if pts := latencyPoints(s); pts != nil {
			lines = append(lines, s.Setup.Name, pts)
		}
	}
	if len(lines) > 0 {
		if err := plotutil.AddLines(all, lines...); err != nil {
			return nil, err
		}
	}
	svg, err := toSVG(all, 3.6*vg.Inch)
	if err != nil {
		return nil, err
	}
	out := []chart{{Title: all.Title.Text, SVG: svg,
		Note: "Each line is one setup's responses over its main runs, in buckets 1.25× apart; x axis logarithmic. A long right tail is the slow requests."}}
	for _, s := range r.Setups {
		pts := latencyPoints(s)
		if pts == nil {
			continue
		}
		_, lat, _ := meanRun(s.Runs)
		p := latencyPlot(fmt.Sprintf("%s: p50 %s, p99 %s, slowest %s (means of the main runs)", s.Setup.Name, fmtSeconds(lat[1]), fmtSeconds(lat[3]), fmtSeconds(lat[5])))
		if err := plotutil.AddLines(p, s.Setup.Name, pts); err != nil {
			return nil, err
		}
		svg, err := toSVG(p, 2.4*vg.Inch)
		if err != nil {
			return nil, err
		}
		out = append(out, chart{Title: "Latency distribution: " + s.Setup.Name, SVG: svg})
	}
	return out, nil
}

// levelTicks labels exactly the sweep's concurrency levels.
type levelTicks []int

func (l levelTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, v := range l {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
	}
	return ticks
}

func toSVG(p *plot.Plot, height vg.Length) (template.HTML, error) {
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	p.BackgroundColor = color.White
	wt, err := p.WriterTo(7.5*vg.Inch, height, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	svg := buf.String()
	if i := strings.Index(svg, "<svg"); i > 0 {
		svg = svg[i:] // drop the XML prolog: the SVG is inlined in HTML
	}
	return template.HTML(svg), nil // generated by gonum/plot from our numbers, not user input
}

var htmlReport = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 15px/1.5 system-ui, sans-serif; color: #1d1d1f; max-width: 64rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: .85rem; margin: .5rem 0 1rem; }
th, td { padding: .25rem .55rem; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
tr.summary td { font-weight: 700; border-bottom: 2px solid #bbb; }
.note { color: #555; font-size: .9rem; }
pre { background: #f5f5f2; padding: .6rem; overflow-x: auto; font-size: .8rem; }
svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Intro}}<p>{{.}}</p>{{end}}
<pre>{{.CommandLine}}</pre>
{{range .Tables}}
<h2>{{.Title}}</h2>
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
<table>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Bold}} class="summary"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}
{{range .Charts}}
<h2>{{.Title}}</h2>
{{.SVG}}
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
{{end}}
<h2>Setups</h2>
<ul>{{range .Setups}}<li>{{.}}</li>{{end}}</ul>
</body>
</html>
`))
