package limiter_test

import (
	"testing"

	"github.com/llmrun/llmrun/limiter/budgettest"
)

// TestBudgetSuite plays the budget conformance scenarios (package
// budgettest) against the in-process limiter; redisbudget plays the same
// ones against Redis and compares the decisions.
func TestBudgetSuite(t *testing.T) { budgettest.Run(t, budgettest.Limiter) }
