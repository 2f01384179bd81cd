package scenarios

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"
	"text/template/parse"
)

// A prompt's template comes from the file, and its input from the file (a
// run's context) or from a model (a child's arguments). text/template has no
// bound of its own on either the work or the output of an execution: ranges
// over an integer ({{range 1000000000}}), ranges nested over the same list,
// or a template that calls itself twice per level of its input are a few
// bytes each, and took minutes and gigabytes. boundedTemplate bounds both.
const (
	// maxTemplateSteps bounds the nodes one execution runs: every action,
	// text, branch and iteration counts one.
	maxTemplateSteps = 1_000_000
	// maxTemplateOutput bounds what one execution writes, in bytes.
	maxTemplateOutput = 16 << 20
)

// stepFunc is the function that counts a step. A template cannot call it:
// it is not defined when the file's template is parsed.
const stepFunc = "crux_sim_template_step"

var (
	errTemplateSteps  = fmt.Errorf("the template runs more than %d steps (a range or a template call repeats without bound); a prompt's template renders its input, it does not compute", maxTemplateSteps)
	errTemplateOutput = fmt.Errorf("the template renders more than %d bytes (%d MiB); a prompt is never that large", maxTemplateOutput, maxTemplateOutput>>20)
)

// stepNode is an action that calls stepFunc and writes nothing; it is
// put before every node of every list of a bounded template.
var stepNode = func() parse.Node {
	t := template.Must(template.New("").Funcs(template.FuncMap{stepFunc: func() string { return "" }}).Parse("{{" + stepFunc + "}}"))
	return t.Tree.Root.Nodes[0]
}()

// boundTemplate puts a step before every node of every list in the trees
// of tmpl (a parsed template, with its {{define}}s), and at the start of
// every list, so that an empty range body counts its iterations too.
func boundTemplate(tmpl *template.Template) {
	for _, t := range tmpl.Templates() {
		if t.Tree != nil {
			boundList(t.Tree.Root)
		}
	}
}

func boundList(l *parse.ListNode) {
	if l == nil {
		return
	}
	nodes := make([]parse.Node, 0, 2*len(l.Nodes)+1)
	nodes = append(nodes, stepNode)
	for _, n := range l.Nodes {
		switch b := n.(type) {
		case *parse.IfNode:
			boundList(b.List)
			boundList(b.ElseList)
		case *parse.RangeNode:
			boundList(b.List)
			boundList(b.ElseList)
		case *parse.WithNode:
			boundList(b.List)
			boundList(b.ElseList)
		case *parse.ListNode:
			boundList(b)
		}
		nodes = append(nodes, n, stepNode)
	}
	l.Nodes = nodes
}

// executeBounded executes a template that boundTemplate bounded, stopping
// it at maxTemplateSteps steps or maxTemplateOutput bytes. Each execution
// has a clone of its own, whose step function counts its own steps, so
// that executions may run at once.
func executeBounded(tmpl *template.Template, input any) (string, error) {
	t, err := tmpl.Clone()
	if err != nil {
		return "", err
	}
	steps := 0
	t.Funcs(template.FuncMap{stepFunc: func() (string, error) {
		if steps++; steps > maxTemplateSteps {
			return "", errTemplateSteps
		}
		return "", nil
	}})
	w := &boundedWriter{}
	err = t.Execute(w, input)
	switch {
	case steps > maxTemplateSteps:
		return "", errTemplateSteps
	case errors.Is(err, errTemplateOutput):
		return "", errTemplateOutput
	case err != nil:
		return "", err
	}
	return w.b.String(), nil
}

type boundedWriter struct{ b strings.Builder }

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > maxTemplateOutput {
		return 0, errTemplateOutput
	}
	return w.b.Write(p)
}

var _ io.Writer = (*boundedWriter)(nil)
