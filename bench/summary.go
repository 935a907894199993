package bench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// talksFix is the setup the summary measures the others against: the
// talk's fix (BEGIN IMMEDIATE and the gem's busy handler), the answer the
// experiment set out to improve on.
const talksFix = "enhanced"

// reliableShare is the most a setup may fail and still be named for its
// throughput: a setup that fails more looks fast only because a failure is
// answered at once.
const reliableShare = 0.01

// setupStat is one setup's runs reduced to what the summary says of it.
type setupStat struct {
	name       string
	rps, p99   float64 // successful req/s and p99 of successful requests, means of the runs
	failShare  float64 // failed requests over all requests of the runs
	failCodes  string  // what the failures were: "503", "503, connection refused"
	hasResults bool
}

func statOf(name string, runs []RunResult) setupStat {
	s := setupStat{name: name, hasResults: len(runs) > 0}
	if !s.hasResults {
		return s
	}
	rps, lat, _ := meanRun(runs)
	s.rps, s.p99 = rps, lat[3]
	var failed, total int64
	kinds := map[string]bool{}
	for _, r := range runs {
		failed += r.Failures
		total += r.Requests
		for code := range r.StatusCodes {
			if !strings.HasPrefix(code, "2") {
				kinds[code] = true
			}
		}
		for kind := range r.Errors {
			kinds[kind] = true
		}
	}
	if total > 0 {
		s.failShare = float64(failed) / float64(total)
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	s.failCodes = strings.Join(names, ", ")
	return s
}

// summary is the report's opening: two or three sentences computed from its
// results that say what it showed. Which setups failed and how often; which
// of those that did not fail served the most successful requests, with what
// p99, against the talk's fix (or the runner-up when the fix is not in the
// report); and the same at the highest concurrency of the scenarios, where
// setups part most. A setup that fails is never named for its throughput.
func (r *Report) summary() []string {
	c := r.Config
	var main []setupStat
	for _, s := range r.Setups {
		if st := statOf(s.Setup.Name, s.Runs); st.hasResults {
			main = append(main, st)
		}
	}
	if len(main) == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("What this run showed, %s at c=%d: %s", c.Action, c.Concurrency, failureSentence(main))}
	if s := bestSentence(main); s != "" {
		out[0] += " " + s
	}
	// The scenario of the report's own action at the highest concurrency.
	level := 0
	for _, sc := range c.Scenarios {
		if sc.Action == c.Action {
			level = max(level, sc.Concurrency)
		}
	}
	if level > 0 && level != c.Concurrency {
		var at []setupStat
		for _, s := range r.Setups {
			var runs []RunResult
			for _, run := range s.Scenarios {
				if run.Action == c.Action && run.Concurrency == level {
					runs = append(runs, run)
				}
			}
			if st := statOf(s.Setup.Name, runs); st.hasResults {
				at = append(at, st)
			}
		}
		if len(at) > 0 {
			out = append(out, fmt.Sprintf("At c=%d (%s, one run each): %s", level, c.Action, failureSentence(at)))
			if s := bestSentence(at); s != "" {
				out[1] += " " + s
			}
		}
	}
	return out
}

// failureSentence says which setups failed requests and how often.
func failureSentence(stats []setupStat) string {
	var failing []setupStat
	for _, s := range stats {
		if s.failShare > 0 {
			failing = append(failing, s)
		}
	}
	if len(failing) == 0 {
		return "no setup failed a request."
	}
	slices.SortStableFunc(failing, func(a, b setupStat) int { return cmp.Compare(b.failShare, a.failShare) })
	parts := make([]string, 0, len(failing))
	for _, s := range failing {
		parts = append(parts, fmt.Sprintf("%s failed %s of its requests (%s)", s.name, fmtShare(s.failShare), s.failCodes))
	}
	sentence := joinAnd(parts)
	switch rest := len(stats) - len(failing); {
	case rest == 1:
		sentence += "; the other setup failed none"
	case rest > 1:
		sentence += fmt.Sprintf("; the other %d setups failed none", rest)
	}
	return sentence + "."
}

// bestSentence names the setup that served the most successful requests
// among those that failed less than reliableShare, against the talk's fix
// or the runner-up, and any failing setup whose successful req/s were
// higher still (it is no winner).
func bestSentence(stats []setupStat) string {
	var reliable []setupStat
	for _, s := range stats {
		if s.failShare < reliableShare {
			reliable = append(reliable, s)
		}
	}
	if len(reliable) == 0 {
		return "No setup failed less than " + fmtShare(reliableShare) + " of its requests."
	}
	slices.SortStableFunc(reliable, func(a, b setupStat) int { return cmp.Compare(b.rps, a.rps) })
	best := reliable[0]
	s := fmt.Sprintf("Of the setups that failed less than %s, %s served the most successful requests: %s req/s, p99 %s",
		fmtShare(reliableShare), best.name, fmtThousands(best.rps), fmtSeconds(best.p99))
	var against *setupStat
	role := "the runner-up"
	if i := slices.IndexFunc(stats, func(s setupStat) bool { return s.name == talksFix }); i >= 0 && best.name != talksFix {
		against, role = &stats[i], "the talk's fix"
	} else if best.name == talksFix {
		s += " (" + talksFix + " is the talk's fix)"
	} else if len(reliable) > 1 {
		against = &reliable[1]
	}
	if against != nil && against.rps > 0 {
		s += fmt.Sprintf(", %.2f× %s, %s (%s req/s, p99 %s)", best.rps/against.rps, role, against.name, fmtThousands(against.rps), fmtSeconds(against.p99))
	}
	s += "."
	var faster []string
	for _, f := range stats {
		if f.failShare >= reliableShare && f.rps > best.rps {
			faster = append(faster, fmt.Sprintf("%s's %s", f.name, fmtThousands(f.rps)))
		}
	}
	if len(faster) > 0 {
		s += fmt.Sprintf(" More successful req/s (%s) came only from failing setups: a failed request is answered at once.", joinAnd(faster))
	}
	return s
}

// fmtShare shows a share (0–1) as a percentage, with the decimals a small
// one needs: 0.59 → "59 %", 0.012 → "1.2 %", 0.0004 → "0.04 %".
func fmtShare(v float64) string {
	p := 100 * v
	switch {
	case p == 0:
		return "0 %"
	case p >= 10 || p == math.Trunc(p):
		return fmt.Sprintf("%.0f %%", p)
	case p >= 1:
		return fmt.Sprintf("%.1f %%", p)
	case p >= 0.01:
		return fmt.Sprintf("%.2f %%", p)
	default:
		return "<0.01 %"
	}
}

// fmtThousands rounds v and groups its digits by thousands: 2373.4 → "2,373".
func fmtThousands(v float64) string {
	digits := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
