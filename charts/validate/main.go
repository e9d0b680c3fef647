package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"-"}
	}
	failed, docs := 0, 0
	for _, name := range args {
		data, err := readInput(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "validate: %v\n", err)
			os.Exit(2)
		}
		n, problems := validateStream(data)
		docs += n
		for _, p := range problems {
			fmt.Printf("%s: %s\n", name, p)
		}
		failed += len(problems)
	}
	if failed > 0 {
		fmt.Printf("validate: %d problem(s) in %d document(s)\n", failed, docs)
		os.Exit(1)
	}
	if docs == 0 {
		fmt.Println("validate: no document")
		os.Exit(1)
	}
	fmt.Printf("validate: %d document(s) ok\n", docs)
}

func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}

// validateStream checks every document of a multi-document YAML stream and
// returns how many documents it held and the problems found.
func validateStream(data []byte) (int, []string) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var problems []string
	n := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return n, problems
		}
		if err != nil {
			return n, append(problems, fmt.Sprintf("reading the stream: %v", err))
		}
		if isEmpty(doc) {
			continue
		}
		n++
		problems = append(problems, validateDoc(doc)...)
	}
}

// isEmpty reports whether a document holds only comments and blanks.
func isEmpty(doc []byte) bool {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return false
	}
	return v == nil
}
