package gateattach

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines the diff shows around a change.
const diffContext = 3

// Diff is a line diff of two texts, in the unified style: "-" lines only in before, "+" lines
// only in after, a few unchanged lines around each change and "@@ line N @@" where a run of
// changes starts. It is empty when the texts are equal.
func Diff(before, after string) string {
	lines := diffLines(strings.SplitAfter(before, "\n"), strings.SplitAfter(after, "\n"))
	var out strings.Builder
	shown := -1 // the last line index printed
	for k := 0; k < len(lines); k++ {
		if lines[k].op == ' ' {
			continue
		}
		start := max(k-diffContext, shown+1)
		if start > shown+1 || shown < 0 {
			fmt.Fprintf(&out, "@@ line %d @@\n", lines[start].at)
		}
		stop := min(runEnd(lines, k)+diffContext, len(lines)-1)
		for m := start; m <= stop; m++ {
			t := strings.TrimSuffix(lines[m].text, "\n")
			if lines[m].text == "" {
				continue
			}
			fmt.Fprintf(&out, "%c %s\n", lines[m].op, t)
		}
		shown = stop
		k = stop
	}
	return out.String()
}

// diffLine is a line of a diff: op ' ' (in both), '-' (only before) or '+'
// (only after), and at, its line number in after (or where it would be).
type diffLine struct {
	op   byte
	text string
	at   int
}

// runEnd is the last change of the run of changes starting at k: changes
// at most 2 × diffContext unchanged lines apart are one run.
func runEnd(lines []diffLine, k int) int {
	end := k
	for end < len(lines) {
		next := end + 1
		for next < len(lines) && lines[next].op == ' ' && next-end <= 2*diffContext {
			next++
		}
		if next < len(lines) && lines[next].op != ' ' {
			end = next
			continue
		}
		return end
	}
	return end
}

// diffLines is the lines of a and b as a diff: the longest common
// subsequence kept, the rest removed from a and added from b.
func diffLines(a, b []string) []diffLine {
	// lcs[i][j]: the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var lines []diffLine
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, diffLine{' ', a[i], j + 1})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, diffLine{'+', b[j], j + 1})
			j++
		default:
			lines = append(lines, diffLine{'-', a[i], j + 1})
			i++
		}
	}
	return lines
}
