// Package kubetest starts a real Kubernetes control plane on loopback for tests: etcd,
// kube-apiserver and kube-controller-manager (garbage collection and namespace deletion), with
// a self-signed CA and a token, and applies CustomResourceDefinitions taken from the Go module
// cache (Istio's from istio.io/api, the Gateway API's, prometheus-operator's). No kubelet runs:
// objects are stored and validated, pods never start.
package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/igwlab/igwlab/internal/testutil"
)

// ControlPlane is a running control plane.
type ControlPlane struct {
	Kubeconfig string // path of an admin kubeconfig
	Rest       *rest.Config
	dir        string
	procs      []*exec.Cmd
}

const token = "igwlab-test-token"

// Start brings a control plane up from the binaries in kubeBin (kube-apiserver,
// kube-controller-manager) and etcd on PATH; it is stopped when the test ends. controllers
// are run besides garbage collection and namespace deletion ("deployment", "replicaset":
// a Deployment's ReplicaSets and pods are made, and stay pending with no node).
func Start(t *testing.T, kubeBin string, controllers ...string) *ControlPlane {
	t.Helper()
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd not installed (apt-get install etcd-server)")
	}
	cp := &ControlPlane{dir: t.TempDir()}
	t.Cleanup(cp.stop)
	ca, caKey := selfSigned(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(cp.dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	caFile := write("ca.crt", caPEM)
	crt, key := serverCert(t, ca, caKey)
	crtFile, keyFile := write("server.crt", crt), write("server.key", key)
	sa, _ := rsa.GenerateKey(rand.Reader, 2048)
	saKey := write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)}))
	pub, _ := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	saPub := write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	tokens := write("tokens.csv", []byte(token+`,admin,admin-uid,"system:masters"`+"\n"))

	client, peer, metrics, api := testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	cp.run(t, "etcd", etcd, "--name", "default", "--data-dir", filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls", url(client), "--advertise-client-urls", url(client),
		"--listen-peer-urls", url(peer), "--initial-advertise-peer-urls", url(peer),
		"--initial-cluster", "default="+url(peer), "--listen-metrics-urls", url(metrics))
	cp.run(t, "kube-apiserver", filepath.Join(kubeBin, "kube-apiserver"),
		"--etcd-servers", url(client), "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(api), "--tls-cert-file", crtFile, "--tls-private-key-file", keyFile,
		"--client-ca-file", caFile, "--token-auth-file", tokens, "--authorization-mode", "RBAC",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", "10.0.0.0/24")
	server := fmt.Sprintf("https://127.0.0.1:%d", api)
	cp.waitReady(t, server, caPEM)
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %s, certificate-authority-data: %s}
users:
- name: admin
  user: {token: %s}
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, server, b64(caPEM), token)
	cp.Kubeconfig = write("kubeconfig", []byte(cfg))
	if cp.Rest, err = clientcmd.BuildConfigFromFlags("", cp.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	cp.run(t, "kube-controller-manager", filepath.Join(kubeBin, "kube-controller-manager"),
		"--kubeconfig", cp.Kubeconfig, "--controllers", strings.Join(append([]string{"garbagecollector", "namespace"}, controllers...), ","), "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--use-service-account-credentials=false")
	return cp
}

func url(port int) string { return fmt.Sprintf("http://127.0.0.1:%d", port) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func (cp *ControlPlane) run(t *testing.T, name, bin string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(cp.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	cp.procs = append(cp.procs, cmd)
}

// Log returns what a component wrote, for failure messages.
func (cp *ControlPlane) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(cp.dir, name+".log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (cp *ControlPlane) waitReady(t *testing.T, server string, ca []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("kube-apiserver not ready:\n%s", cp.Log("kube-apiserver"))
}

// stop ends the components in the order that lets each exit promptly.
func (cp *ControlPlane) stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		if p.Process != nil {
			_ = p.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = p.Process.Kill()
			}
		}
	}
}

func selfSigned(t *testing.T) (*x509.Certificate, *rsa.PrivateKey) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "igwlab-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func serverCert(t *testing.T, ca *x509.Certificate, caKey *rsa.PrivateKey) ([]byte, []byte) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost", "kubernetes.default.svc"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// ModuleDir downloads a module through the Go module proxy (or finds it in the module cache)
// and returns its folder: the CRDs come from there, never from this repository.
func ModuleDir(t *testing.T, mod string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", mod).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", mod, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %s", mod, out)
	}
	return m.Dir
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDs creates every CustomResourceDefinition in the files and waits until each is established.
func (cp *ControlPlane) ApplyCRDs(t *testing.T, files ...string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cp.Rest)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				break
			}
			if doc["kind"] != "CustomResourceDefinition" {
				continue
			}
			obj := &unstructured.Unstructured{Object: jsonSafe(doc).(map[string]any)}
			if _, err := dyn.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatalf("CRD %s from %s: %v", obj.GetName(), f, err)
			}
			names = append(names, obj.GetName())
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range names {
		for {
			u, err := dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err == nil && established(u) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not established", n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// jsonSafe turns YAML's decoded values into what unstructured accepts (int64, not int).
func jsonSafe(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonSafe(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = jsonSafe(e)
		}
		return x
	case int:
		return int64(x)
	}
	return v
}
