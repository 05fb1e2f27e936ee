package cpu

// topK selects each row's k largest values, descending, ties to the lowest
// index, by insertion into a k-slot buffer: one pass, no full sort.
func topK(ids []int32, vals []float32, logits []float32, T, V, k int) {
	for r := 0; r < T; r++ {
		row := logits[r*V : (r+1)*V]
		id := ids[r*k : (r+1)*k]
		val := vals[r*k : (r+1)*k]
		n := 0
		for i, v := range row {
			v = nanAsInf(v)
			var p int
			if n < k {
				p = n
				n++
			} else if v > val[k-1] {
				p = k - 1
			} else {
				continue
			}
			for p > 0 && v > val[p-1] {
				val[p], id[p] = val[p-1], id[p-1]
				p--
			}
			val[p], id[p] = v, int32(i)
		}
	}
}
