package pricing

// USDOrNull is c in dollars for a JSON field that is null when the cost
// is not known (some answer had no price): nil unless known.
func (c Cost) USDOrNull(known bool) *float64 {
	if !known {
		return nil
	}
	v := c.USD()
	return &v
}
