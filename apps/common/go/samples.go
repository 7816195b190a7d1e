// Package common holds what the apps' Go peers share.
package common

// RecentCapacity is how many samples a RecentSamples keeps.
const RecentCapacity = 65536

// RecentSamples keeps the last RecentCapacity samples, the oldest overwritten first (as the C++
// servers' apps::recent_samples): a long-running server's statistics take bounded memory.
// Not synchronized: the owner guards it.
type RecentSamples struct {
	Values []float64 // in no particular order
	oldest int
}

// Add records x, overwriting the oldest sample once full.
func (r *RecentSamples) Add(x float64) {
	if len(r.Values) < RecentCapacity {
		r.Values = append(r.Values, x)
		return
	}
	r.Values[r.oldest] = x
	r.oldest = (r.oldest + 1) % RecentCapacity
}
