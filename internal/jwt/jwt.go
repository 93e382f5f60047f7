// Package jwt signs and verifies the RS256 tokens of scenario 11, with a key generated for the
// lab (no key is fetched from anywhere), and publishes the key set a RequestAuthentication uses.
package jwt

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"time"
)

// Key is a signing key with its key id.
type Key struct {
	priv *rsa.PrivateKey
	kid  string
}

// Generate makes a new 2048-bit RSA key, the size of Istio's sample key.
func Generate(kid string) (*Key, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Key{priv: k, kid: kid}, nil
}

// PEM encodes the private key (to keep it as a secret between runs).
func (k *Key) PEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k.priv)}))
}

// FromPEM reads a key written by PEM.
func FromPEM(kid, text string) (*Key, error) {
	b, _ := pem.Decode([]byte(text))
	if b == nil {
		return nil, errors.New("jwt: not a PEM key")
	}
	priv, err := x509.ParsePKCS1PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	return &Key{priv: priv, kid: kid}, nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Token mints a token for issuer, valid for ttl.
func (k *Key) Token(issuer string, ttl time.Duration) string {
	hdr, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": k.kid})
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": issuer, "sub": "igwlab-client", "iat": now.Unix(), "exp": now.Add(ttl).Unix()})
	signing := b64(hdr) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, k.priv, crypto.SHA256, sum[:])
	return signing + "." + b64(sig)
}

// JWKS returns the public key set, as a RequestAuthentication's jwks field takes it.
func (k *Key) JWKS() string {
	pub := k.priv.PublicKey
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": k.kid, "n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}}})
	return string(doc)
}

// Verify checks a token's signature, key id, issuer and expiry.
func (k *Key) Verify(tok, issuer string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	var hdr struct{ Alg, Kid string }
	var claims struct {
		Iss string
		Exp int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &hdr) != nil || json.Unmarshal(cb, &claims) != nil {
		return false
	}
	if hdr.Alg != "RS256" || hdr.Kid != k.kid || claims.Iss != issuer || time.Now().Unix() > claims.Exp {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(&k.priv.PublicKey, crypto.SHA256, sum[:], sig) == nil
}
