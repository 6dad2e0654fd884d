// Package kv is a tiny in-memory key-value server.
package kv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// ErrNotFound is returned when a key is missing.
var ErrNotFound = errors.New("kv: not found")

// Store holds values under string keys; safe for concurrent use.
type Store struct {
	mu   sync.RWMutex
	data map[string][]byte
	// ユーザー名ごとの書き込み回数
	writes map[string]int
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{data: make(map[string][]byte), writes: make(map[string]int)}
}

// Get returns the value for key, or ErrNotFound.
func (s *Store) Get(key string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.data[key]
	if !ok {
		return nil, fmt.Errorf("get %q: %w", key, ErrNotFound)
	}
	return v, nil
}

// Put stores value under key for user.
func (s *Store) Put(user, key string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[key] = value
	s.writes[user]++
}

type handler struct {
	store *Store
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Path[1:]
	switch r.Method {
	case http.MethodGet:
		v, err := h.store.Get(key)
		if errors.Is(err, ErrNotFound) {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(v)
	case http.MethodPut:
		var body json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.store.Put(r.Header.Get("X-User"), key, body)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// Handler serves the store over HTTP.
func Handler(s *Store) http.Handler { return handler{store: s} }
