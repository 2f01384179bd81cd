package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/crux-sim/crux-sim/scenarios"
)

// The manifests under deploy/ are what a user applies to run a campaign as
// a Kubernetes Indexed Job. No cluster runs here, so this test holds them
// to what Kubernetes would: each one decodes strictly into its API type (a
// misspelt or misplaced field is an error, as kubectl apply --validate=strict
// makes it), the fields the campaign depends on agree with each other, and
// the Job's own command line, run here once per completion index with
// JOB_COMPLETION_INDEX set and the volumes laid out as the pods see them,
// gives summaries whose merge counts what the same campaign unsharded does.

const deployDir = "../../deploy"

// decodeStrict reads one manifest into its API type and checks its kind.
func decodeStrict(t *testing.T, name string, into any, apiVersion, kind string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("deploy/%s does not decode strictly into %s %s: %v", name, apiVersion, kind, err)
	}
	var meta struct{ APIVersion, Kind string }
	_ = yaml.Unmarshal(b, &meta)
	if meta.APIVersion != apiVersion || meta.Kind != kind {
		t.Fatalf("deploy/%s is %s %s, want %s %s", name, meta.APIVersion, meta.Kind, apiVersion, kind)
	}
}

func TestTheDeployManifestsDecodeStrictlyIntoTheKubernetesTypes(t *testing.T) {
	// The strict decoder is what the other checks rest on: show that it
	// refuses a field the API does not have.
	var probe batchv1.Job
	if err := yaml.UnmarshalStrict([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionsMode: Indexed\n"), &probe); err == nil {
		t.Fatal("the strict decoder accepted an unknown field (completionsMode)")
	}
	m := readManifests(t)
	if m.job.Spec.CompletionMode == nil || *m.job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("the fuzz Job is not an Indexed Job: completionMode %v", m.job.Spec.CompletionMode)
	}
	if m.job.Spec.Completions == nil || m.job.Spec.Parallelism == nil || *m.job.Spec.Parallelism > *m.job.Spec.Completions {
		t.Errorf("the fuzz Job needs completions, and parallelism at most completions: %v, %v", m.job.Spec.Completions, m.job.Spec.Parallelism)
	}
	for _, j := range []*batchv1.Job{m.job, m.merge} {
		if p := j.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever {
			t.Errorf("job %s restarts its pods (%q): a shard's summary must be written once", j.Name, p)
		}
		if n := len(j.Spec.Template.Spec.Containers); n != 1 {
			t.Fatalf("job %s has %d containers, want 1", j.Name, n)
		}
	}
	fuzz := m.job.Spec.Template.Spec.Containers[0]
	if env(fuzz, "SHARDS") != strconv.Itoa(int(*m.job.Spec.Completions)) {
		t.Errorf("SHARDS is %q but the Job has %d completions: shards would be lost or run twice", env(fuzz, "SHARDS"), *m.job.Spec.Completions)
	}
	script := strings.Join(fuzz.Args, " ")
	for _, want := range []string{"$JOB_COMPLETION_INDEX/$SHARDS", "--json", "results/shard-$JOB_COMPLETION_INDEX.json"} {
		if !strings.Contains(script, want) {
			t.Errorf("the fuzz command line lacks %q: %s", want, script)
		}
	}
	mergeArgs := strings.Join(m.merge.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(mergeArgs, "--merge results/shard-*.json") {
		t.Errorf("the merge step does not merge the shards' summaries: %s", mergeArgs)
	}

	// The scenario files come from the ConfigMap, mounted read-only.
	vol, mount := volume(t, m.job, fuzz, "scenarios")
	if vol.ConfigMap == nil || vol.ConfigMap.Name != m.scenarios.Name {
		t.Errorf("the scenarios volume is not the ConfigMap %s: %+v", m.scenarios.Name, vol.VolumeSource)
	}
	if !mount.ReadOnly {
		t.Error("the scenarios are mounted writable")
	}
	for key, body := range m.scenarios.Data {
		name := strings.TrimSuffix(key, ".yaml")
		want, ok := scenarios.BuiltinSource(name)
		if !ok || string(want) != body {
			t.Errorf("the ConfigMap's %s is not the built-in %s as it ships (regenerate deploy/scenarios-configmap.yaml)", key, name)
		}
		if !strings.Contains(script, "scenarios/"+key) {
			t.Errorf("the fuzz command line does not run the ConfigMap's %s", key)
		}
	}
	// The summaries go to the claim, which every pod can write at once,
	// and the merge step reads it.
	for _, c := range []struct {
		job       *batchv1.Job
		container corev1.Container
	}{{m.job, fuzz}, {m.merge, m.merge.Spec.Template.Spec.Containers[0]}} {
		vol, mount := volume(t, c.job, c.container, "results")
		if vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != m.results.Name {
			t.Errorf("job %s: the results volume is not the claim %s: %+v", c.job.Name, m.results.Name, vol.VolumeSource)
		}
		if mount.MountPath != filepath.Join(c.container.WorkingDir, "results") {
			t.Errorf("job %s mounts results at %s, not under its working directory %s", c.job.Name, mount.MountPath, c.container.WorkingDir)
		}
	}
	if !containsMode(m.results.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("the results claim is %v: the shards' pods run on several nodes at once and need ReadWriteMany", m.results.Spec.AccessModes)
	}
}

func TestTheJobsOwnCommandLinePerIndexMergesToTheUnshardedCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	m := readManifests(t)
	fuzz := m.job.Spec.Template.Spec.Containers[0]
	// The pods' file system: the volumes at their mount paths under root.
	root := t.TempDir()
	_, scenarioMount := volume(t, m.job, fuzz, "scenarios")
	_, resultsMount := volume(t, m.job, fuzz, "results")
	for _, dir := range []string{scenarioMount.MountPath, resultsMount.MountPath} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for key, body := range m.scenarios.Data {
		if err := os.WriteFile(filepath.Join(root, scenarioMount.MountPath, key), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", filepath.Join(bin, "crux-sim"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A small campaign: the manifest's own command line, with SEEDS set
	// smaller than the manifest's.
	const seeds = "300"
	shards := int(*m.job.Spec.Completions)
	run := func(c corev1.Container, index int) string {
		cmd := exec.Command(c.Command[0], append(c.Command[1:], c.Args...)...)
		cmd.Dir = filepath.Join(root, c.WorkingDir)
		cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + root}
		for _, e := range c.Env {
			if e.Name == "SEEDS" {
				e.Value = seeds
			}
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
		if index >= 0 {
			cmd.Env = append(cmd.Env, "JOB_COMPLETION_INDEX="+strconv.Itoa(index))
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil && index >= 0 {
			t.Fatalf("index %d: %v\n%s", index, err, out.String())
		}
		return out.String()
	}
	for i := range shards {
		run(fuzz, i)
	}
	merged := run(m.merge.Spec.Template.Spec.Containers[0], -1)
	got := mergedCounts.FindStringSubmatch(merged)
	if got == nil || got[1] != strconv.Itoa(shards) {
		t.Fatalf("the merge of %d shards printed:\n%s", shards, merged)
	}

	files, _ := filepath.Glob(filepath.Join(root, scenarioMount.MountPath, "*.yaml"))
	summary := filepath.Join(t.TempDir(), "all.json")
	args := append([]string{"fuzz", "--seeds", seeds, "--jobs", env(fuzz, "JOBS"), "--json", summary, "--out", t.TempDir()}, files...)
	if code, out := runCLI(t, args...); code != 0 {
		t.Fatalf("the unsharded campaign exited %d:\n%s", code, out)
	}
	whole, err := readSummary(summary)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d schedules, %d failing", whole.Schedules, whole.Failing)
	if got[2] != want {
		t.Errorf("the merged shards counted %q, the same campaign unsharded %q", got[2], want)
	}
	if n, _ := strconv.Atoi(seeds); whole.Schedules != int64(n*len(files)) {
		t.Errorf("the unsharded campaign ran %d schedules, want %d", whole.Schedules, n*len(files))
	}
}

var mergedCounts = regexp.MustCompile(`(?m)^(\d+) shards: (\d+ schedules, \d+ failing)`)

type manifests struct {
	scenarios *corev1.ConfigMap
	results   *corev1.PersistentVolumeClaim
	job       *batchv1.Job
	merge     *batchv1.Job
}

func readManifests(t *testing.T) manifests {
	t.Helper()
	m := manifests{&corev1.ConfigMap{}, &corev1.PersistentVolumeClaim{}, &batchv1.Job{}, &batchv1.Job{}}
	decodeStrict(t, "scenarios-configmap.yaml", m.scenarios, "v1", "ConfigMap")
	decodeStrict(t, "results-pvc.yaml", m.results, "v1", "PersistentVolumeClaim")
	decodeStrict(t, "fuzz-job.yaml", m.job, "batch/v1", "Job")
	decodeStrict(t, "merge-job.yaml", m.merge, "batch/v1", "Job")
	if len(m.scenarios.Data) == 0 {
		t.Fatal("the scenarios ConfigMap holds no files")
	}
	return m
}

// volume returns a pod volume by name and the container's mount of it.
func volume(t *testing.T, j *batchv1.Job, c corev1.Container, name string) (corev1.Volume, corev1.VolumeMount) {
	t.Helper()
	var vol *corev1.Volume
	for i, v := range j.Spec.Template.Spec.Volumes {
		if v.Name == name {
			vol = &j.Spec.Template.Spec.Volumes[i]
		}
	}
	for _, vm := range c.VolumeMounts {
		if vm.Name == name && vol != nil {
			return *vol, vm
		}
	}
	t.Fatalf("job %s: no volume %q mounted in container %s", j.Name, name, c.Name)
	return corev1.Volume{}, corev1.VolumeMount{}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func containsMode(modes []corev1.PersistentVolumeAccessMode, m corev1.PersistentVolumeAccessMode) bool {
	for _, x := range modes {
		if x == m {
			return true
		}
	}
	return false
}
