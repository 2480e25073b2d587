// The DAE pass's structural check, a maximum bipartite matching (compiler/dae/Dae.h): its
// size against an independent maximum (Kuhn's augmenting paths, recursive, on small graphs), its
// validity (each column used once, along an edge), and long chains whose augmenting paths are as
// long as the chain. (The first depth-first algorithm was O(V E): 31 % of the DAE pass of a
// Cartesian chain of 3,200 masses; Hopcroft-Karp is O(E sqrt(V)).)
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "compiler/dae/Dae.h"

namespace mbs {
namespace {

using Graph = std::vector<std::vector<int>>;

// The size of a maximum matching by Kuhn's algorithm.
int kuhn_size(const Graph& adj, int n_cols) {
  std::vector<int> row_of_col(static_cast<size_t>(n_cols), -1);
  std::vector<char> seen;
  const std::function<bool(int)> augment = [&](int r) {
    for (int c : adj[static_cast<size_t>(r)]) {
      if (seen[static_cast<size_t>(c)]) continue;
      seen[static_cast<size_t>(c)] = 1;
      const int other = row_of_col[static_cast<size_t>(c)];
      if (other < 0 || augment(other)) {
        row_of_col[static_cast<size_t>(c)] = r;
        return true;
      }
    }
    return false;
  };
  int size = 0;
  for (int r = 0; r < static_cast<int>(adj.size()); ++r) {
    seen.assign(static_cast<size_t>(n_cols), 0);
    size += augment(r) ? 1 : 0;
  }
  return size;
}

// The size of `match` after checking that it is a matching of `adj`.
int checked_size(const Graph& adj, int n_cols, const std::vector<int>& match) {
  EXPECT_EQ(match.size(), adj.size());
  std::vector<int> used(static_cast<size_t>(n_cols), 0);
  int size = 0;
  for (size_t r = 0; r < match.size(); ++r) {
    const int c = match[r];
    if (c < 0) continue;
    EXPECT_LT(c, n_cols);
    bool edge = false;
    for (int a : adj[r]) edge |= a == c;
    EXPECT_TRUE(edge) << "row " << r << " matched to column " << c << " without an edge";
    EXPECT_EQ(++used[static_cast<size_t>(c)], 1) << "column " << c << " matched twice";
    ++size;
  }
  return size;
}

TEST(DaeMatching, RandomGraphsGetAMaximumMatching) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    // every other graph square with a perfect matching planted (a random permutation)
    const bool square = trial % 2 == 0;
    const int rows = 1 + static_cast<int>(rng() % 30);
    const int cols = square ? rows : 1 + static_cast<int>(rng() % 30);
    const int degree = 1 + static_cast<int>(rng() % 4);
    std::vector<int> perm(static_cast<size_t>(rows));
    for (int i = 0; i < rows; ++i) perm[static_cast<size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    Graph adj(static_cast<size_t>(rows));
    for (size_t r = 0; r < adj.size(); ++r) {
      auto& a = adj[r];
      for (int k = 0; k < degree; ++k)
        if (rng() % 4 != 0) a.push_back(static_cast<int>(rng() % static_cast<unsigned>(cols)));
      if (square) a.push_back(perm[r]);
      std::sort(a.begin(), a.end());
      a.erase(std::unique(a.begin(), a.end()), a.end());
      std::shuffle(a.begin(), a.end(), rng);  // the order the greedy start sees
    }
    SCOPED_TRACE(trial);
    const int maximum = kuhn_size(adj, cols);
    EXPECT_EQ(checked_size(adj, cols, hopcroft_karp(adj, cols)), maximum);
    EXPECT_EQ(checked_size(adj, cols, bipartite_matching(adj, cols)), maximum);
    if (square) {
      EXPECT_EQ(maximum, rows);
    }
  }
}

// Row i has columns i + 1 and i (in that order), the last row only its own: the greedy start
// takes column i + 1 for every row, and the last row's augmenting path runs through all of them
// (200,000 rows deep: no recursion). A ladder of pairs of rows sharing three columns.
TEST(DaeMatching, LongChainsAreMatchedPerfectly) {
  for (const int n : {1000, 200000}) {
    Graph chain(static_cast<size_t>(n));
    for (int i = 0; i + 1 < n; ++i) chain[static_cast<size_t>(i)] = {i + 1, i};
    chain[static_cast<size_t>(n - 1)] = {n - 1};
    EXPECT_EQ(checked_size(chain, n, hopcroft_karp(chain, n)), n) << n;
    EXPECT_EQ(checked_size(chain, n, bipartite_matching(chain, n)), n) << n;
  }
  // a ladder: rows 2i and 2i+1 share columns 2i, 2i+1, 2i+2 (the last pair only its own)
  const int n = 20000;
  Graph ladder(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int base = i - i % 2;
    for (int c = base + 2; c >= base; --c)
      if (c < n) ladder[static_cast<size_t>(i)].push_back(c);
  }
  EXPECT_EQ(checked_size(ladder, n, hopcroft_karp(ladder, n)), n);
}

// A matching that is not perfect is the one of the first algorithm (the diagnostics name the rows
// and columns it leaves free): too many rows, too few, and a singular square system.
TEST(DaeMatching, ImperfectMatchingsAreMaximumToo) {
  const Graph too_many = {{0}, {0}, {1}};
  EXPECT_EQ(checked_size(too_many, 2, bipartite_matching(too_many, 2)), 2);
  EXPECT_EQ(bipartite_matching(too_many, 2)[1], -1);  // the second row that wants column 0
  const Graph too_few = {{0, 1}, {1, 2}};
  EXPECT_EQ(checked_size(too_few, 3, bipartite_matching(too_few, 3)), 2);
  const Graph singular = {{0}, {0}, {1, 2}};
  EXPECT_EQ(checked_size(singular, 3, bipartite_matching(singular, 3)), 2);
}

}  // namespace
}  // namespace mbs
