package operator

import "strings"

var blocks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values as one line of Unicode blocks, scaled from 0 (or
// the smallest value, if negative) to the largest, keeping the last width
// values. All-zero values draw as the lowest block.
func Sparkline(values []int64, width int) string {
	if width > 0 && len(values) > width {
		values = values[len(values)-width:]
	}
	if len(values) == 0 {
		return ""
	}
	lo, hi := int64(0), int64(0)
	for _, v := range values {
		lo, hi = min(lo, v), max(hi, v)
	}
	var b strings.Builder
	for _, v := range values {
		i := 0
		if hi > lo {
			i = int((v - lo) * int64(len(blocks)-1) / (hi - lo))
		}
		b.WriteRune(blocks[i])
	}
	return b.String()
}
