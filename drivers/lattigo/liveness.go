package main

import "strings"

// deadAfter maps a step's index to the values (step results and sample inputs)
// nothing reads after that step, to free there: a deep program makes hundreds
// of ciphertexts, and keeping each until the sample ends made its peak memory
// their sum (PROTOCOL.md "Values a sample frees"). What the request reads after
// the last step (outputs, noise, sizes, levels) is kept; a program that names a
// value per sample (a `$` arg) frees nothing. The Python drivers' dead_after
// (drivers/python_shared/jsonl_driver.py) is the same rule.
func deadAfter(prog *program, samples []sampleIn) map[int][]string {
	made := map[string]bool{}
	for _, smp := range samples {
		for name := range smp.Inputs {
			made[name] = true
		}
	}
	last := map[string]int{}
	for i, st := range prog.Steps {
		made[st.Out] = true
		last[st.Out] = i
	}
	for i, st := range prog.Steps {
		for _, a := range st.Args {
			if strings.HasPrefix(a, "$") {
				return nil
			}
			last[a] = i
		}
		for _, name := range namesIn(st.Attrs) {
			last[name] = i
		}
	}
	for _, group := range [][]string{prog.Outputs, prog.Noise, prog.Sizes, prog.Levels} {
		for _, name := range group {
			delete(last, name)
		}
	}
	dies := map[int][]string{}
	for name, i := range last {
		if made[name] {
			dies[i] = append(dies[i], name)
		}
	}
	return dies
}

// namesIn is every string an attrs value holds (a `like`, a key's name): any may name a value.
func namesIn(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case map[string]any:
		var out []string
		for _, x := range t {
			out = append(out, namesIn(x)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, namesIn(x)...)
		}
		return out
	}
	return nil
}
