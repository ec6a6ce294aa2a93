// Gmsh MSH 2.2 and 4.1 reader, ASCII and binary (either byte order), parsing the file in place.
// Counts from the file are checked against the bytes that remain before anything is allocated.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "fem/error.hpp"
#include "fem/mesh/detail/scanner.hpp"
#include "fem/mesh/read.hpp"

namespace fem::mesh {
namespace {

using detail::Scanner;

constexpr std::size_t kNumTypes = 11;
constexpr auto kMaxIndex = static_cast<std::uint64_t>(std::numeric_limits<index_t>::max());

/// Elements of one type as they come: node indices, one physical tag per row. An element in
/// several physical groups comes once per group (MSH 4.1: in a row, for an entity with several
/// physical tags; MSH 2.2: wherever Gmsh lists that group's elements, each copy with its own
/// element number). `may_repeat` says that it happened: finish() then merges the copies into one
/// element of a set of groups (merge_copies).
struct Bucket {
  std::vector<index_t> nodes;
  std::vector<int> tags;
  bool may_repeat = false;
  const char* first = nullptr;  // where the first element of this type was found, for messages
  // MSH 2.2: the physical group each elementary entity came with (a second one means copies).
  std::map<int, int> entity_group;
  int last_entity = 0, last_group = 0;
  std::size_t rows() const noexcept { return tags.size(); }
};

/// The tag that stands for the groups `members` (sorted, at least two) of dimension `dim`: an
/// existing set's, or a new set's (-1, -2, ... in order of appearance).
int set_tag(std::vector<TagSet>& sets, int dim, std::vector<int> members) {
  int count = 0;
  for (const auto& s : sets) {
    if (s.dim != dim) continue;
    ++count;
    if (s.members == members) return s.tag;
  }
  sets.push_back({dim, -(count + 1), std::move(members)});
  return sets.back().tag;
}

/// The elements of `b` (k nodes each) once each, in the order of their first copy, the copies
/// (the same nodes, in any order) merged into one element of all their groups: a group's tag, or
/// a set's (0, no group, only where it has no other).
void merge_copies(Bucket& b, int k, int dim, std::vector<TagSet>& sets) {
  const std::size_t rows = b.rows(), kk = static_cast<std::size_t>(k);
  std::vector<index_t> key(b.nodes);
  for (std::size_t r = 0; r < rows; ++r) std::sort(key.begin() + r * kk, key.begin() + (r + 1) * kk);
  std::vector<std::size_t> order(rows);
  for (std::size_t r = 0; r < rows; ++r) order[r] = r;
  const auto less = [&](std::size_t a, std::size_t c) {
    return std::lexicographical_compare(key.begin() + a * kk, key.begin() + (a + 1) * kk,
                                        key.begin() + c * kk, key.begin() + (c + 1) * kk);
  };
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<int> tag(rows, 0);
  std::vector<char> keep(rows, 0);
  for (std::size_t i = 0; i < rows;) {
    std::size_t j = i + 1;
    while (j < rows && !less(order[i], order[j])) ++j;
    std::size_t first = order[i];
    std::vector<int> groups;
    for (std::size_t m = i; m < j; ++m) {
      first = std::min(first, order[m]);
      groups.push_back(b.tags[order[m]]);
    }
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    if (groups.size() > 1 && groups.front() == 0) groups.erase(groups.begin());
    keep[first] = 1;
    tag[first] = groups.size() == 1 ? groups.front() : set_tag(sets, dim, std::move(groups));
    i = j;
  }
  std::size_t out = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    if (!keep[r]) continue;
    std::copy(b.nodes.begin() + r * kk, b.nodes.begin() + (r + 1) * kk, b.nodes.begin() + out * kk);
    b.tags[out++] = tag[r];
  }
  b.nodes.resize(out * kk);
  b.tags.resize(out);
  b.may_repeat = false;
}

/// Node tag → index: the identity on a contiguous run of tags (the common case), else a dense
/// table when the tags are not too sparse, else a sorted list. A tag given twice is ambiguous
/// (which coordinates do the elements mean?): build() finds it while filling the table (or in
/// the sorted list) and returns where it is, in file order, for the reader's error.
class NodeIndex {
 public:
  /// The first repeated tag in file order: the positions of its first and its second copy.
  struct Repeat {
    std::size_t first, again;
  };

  std::optional<Repeat> build(const std::vector<std::uint64_t>& tags) {
    n_ = tags.size();
    first_ = n_ ? tags[0] : 0;
    contiguous_ = true;
    for (std::size_t i = 0; i < n_; ++i)
      if (tags[i] != first_ + i) {
        contiguous_ = false;
        break;
      }
    if (contiguous_) return std::nullopt;  // strictly increasing: no repeats
    const auto [lo, hi] = std::minmax_element(tags.begin(), tags.end());
    min_ = *lo;
    if (*hi - *lo < 4 * static_cast<std::uint64_t>(n_) + 1024) {
      dense_.assign(*hi - *lo + 1, -1);
      for (std::size_t i = 0; i < n_; ++i) {
        index_t& slot = dense_[tags[i] - min_];
        if (slot >= 0) return Repeat{static_cast<std::size_t>(slot), i};
        slot = static_cast<index_t>(i);
      }
      return std::nullopt;
    }
    sorted_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) sorted_[i] = {tags[i], static_cast<index_t>(i)};
    std::stable_sort(sorted_.begin(), sorted_.end(), [](auto& a, auto& b) { return a.first < b.first; });
    // Equal tags are adjacent, in file order: the earliest second copy over all runs.
    std::optional<Repeat> repeat;
    for (std::size_t k = 1; k < n_; ++k)
      if (sorted_[k].first == sorted_[k - 1].first) {
        const auto again = static_cast<std::size_t>(sorted_[k].second);
        if (!repeat || again < repeat->again)
          repeat = Repeat{static_cast<std::size_t>(sorted_[k - 1].second), again};
        while (k + 1 < n_ && sorted_[k + 1].first == sorted_[k].first) ++k;
      }
    return repeat;
  }
  /// The index of a node tag, or -1.
  index_t find(std::uint64_t tag) const noexcept {
    if (contiguous_) {
      const std::uint64_t d = tag - first_;
      return d < n_ ? static_cast<index_t>(d) : -1;
    }
    if (!dense_.empty()) {
      const std::uint64_t d = tag - min_;
      return d < dense_.size() ? dense_[d] : -1;
    }
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), tag,
                               [](auto& p, std::uint64_t t) { return p.first < t; });
    return it != sorted_.end() && it->first == tag ? it->second : -1;
  }

 private:
  std::size_t n_ = 0;
  std::uint64_t first_ = 0, min_ = 0;
  bool contiguous_ = true;
  std::vector<index_t> dense_;
  std::vector<std::pair<std::uint64_t, index_t>> sorted_;
};

std::string supported_types() {
  std::string s;
  for (std::size_t t = 0; t < kNumTypes; ++t) {
    const auto& i = cell_info(static_cast<CellType>(t));
    s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", i.gmsh_type, i.name);
  }
  return s;
}

class GmshReader {
 public:
  GmshReader(std::string_view bytes, std::string_view name) : s_(bytes, std::string(name)) {}

  Mesh read() {
    s_.skip_space();
    if (s_.at_end()) s_.fail("empty file: expected '$MeshFormat'");
    if (s_.peek_token() != "$MeshFormat") s_.expected("'$MeshFormat' (not a Gmsh mesh file)");
    s_.token();
    read_format();
    for (;;) {
      s_.skip_space();
      if (s_.at_end()) break;
      const char* at = s_.pos();
      const auto word = s_.token();
      if (word == "$PhysicalNames")
        read_physical_names();
      else if (word == "$Entities")
        read_entities(false);
      else if (word == "$PartitionedEntities")
        read_entities(true);
      else if (word == "$Nodes") {
        if (have_nodes_) s_.fail_at(at, "a second $Nodes section");
        v4_ ? read_nodes4() : read_nodes2();
      } else if (word == "$Elements") {
        if (!have_nodes_) s_.fail_at(at, "expected '$Nodes' before '$Elements'");
        if (have_elements_) s_.fail_at(at, "a second $Elements section");
        v4_ ? read_elements4() : read_elements2();
      } else if (word == "$MeshFormat") {
        s_.fail_at(at, "a second $MeshFormat section");
      } else if (word.size() > 1 && word[0] == '$' && !word.starts_with("$End")) {
        skip_section(word, at);
      } else {
        s_.seek(at);
        s_.expected("a section such as '$Nodes' or '$Elements'");
      }
    }
    return finish();
  }

 private:
  // ---- sections -----------------------------------------------------------------------------

  void read_format() {
    const char* at = s_.pos();
    const auto version = s_.token();
    if (version.starts_with("4.1"))
      v4_ = true;
    else if (version.starts_with("2."))
      v4_ = false;
    else {
      s_.seek(at);
      s_.expected("MSH version 2.2 or 4.1");
    }
    const int file_type = s_.integer<int>("file type (0 = ASCII, 1 = binary)");
    if (file_type != 0 && file_type != 1) s_.fail("expected file type 0 (ASCII) or 1 (binary)");
    const char* ds_at = s_.pos();
    const int data_size = s_.integer<int>("data size");
    if (data_size != 8) s_.fail_at(ds_at, fmt::format("expected data size 8, found {}", data_size));
    if (file_type == 1) {
      s_.set_binary(true);
      end_header_line();
      const char* one_at = s_.pos();
      const auto one = s_.bin<std::int32_t>("the binary marker 1");
      if (one == Scanner::byteswap(std::int32_t{1}))
        s_.set_swap(true);
      else if (one != 1)
        s_.fail_at(one_at, fmt::format("expected the binary marker 1 in either byte order, found {}", one));
    }
    s_.expect_word("$EndMeshFormat");
  }

  // In binary files the data starts right after the newline that ends a section's header line.
  void end_header_line() {
    while (!s_.at_end() && (*s_.pos() == ' ' || *s_.pos() == '\t' || *s_.pos() == '\r'))
      s_.seek(s_.pos() + 1);
    if (s_.at_end() || *s_.pos() != '\n') s_.expected("the end of the line");
    s_.seek(s_.pos() + 1);
  }

  void skip_section(std::string_view word, const char* at) {
    const std::string end = "$End" + std::string(word.substr(1));
    const std::string_view rest(s_.pos(), s_.remaining());
    const auto k = rest.find(end);
    if (k == std::string_view::npos) s_.fail_at(at, fmt::format("section {} has no '{}'", word, end));
    s_.seek(s_.pos() + k + end.size());
  }

  // A (dimension, tag) named twice, or one name given to two tags of a dimension, would make
  // tag_of()/name_of() depend on the order of the lines: an error naming both lines. The same
  // name in different dimensions is legal (Gmsh keeps one group per dimension).
  void read_physical_names() {
    const char* at = s_.pos();
    const auto n = s_.integer<std::uint64_t>("number of physical names");
    s_.check_count(n, 6, "number of physical names", at);
    names_.reserve(names_.size() + n);
    for (std::uint64_t i = 0; i < n; ++i) {
      s_.skip_space();
      const char* line = s_.pos();
      PhysicalName p;
      p.dim = s_.integer<int>("physical dimension");
      if (p.dim < 0 || p.dim > 3) s_.fail(fmt::format("physical dimension {} is not 0..3", p.dim));
      p.tag = s_.integer<int>("physical tag");
      p.name = std::string(s_.quoted("quoted physical name"));
      const auto [tag_it, new_tag] = name_at_.emplace(std::pair{p.dim, p.tag}, line);
      if (!new_tag)
        s_.fail_at(line,
                   fmt::format("physical group {} of dimension {} is named a second time, as \"{}\" (the "
                               "first name is at {})",
                               p.tag, p.dim, p.name, s_.where(tag_it->second)));
      const auto [name_it, new_name] = tag_of_name_.emplace(std::pair{p.dim, p.name}, std::pair{p.tag, line});
      if (!new_name)
        s_.fail_at(
            line,
            fmt::format("physical name \"{}\" of dimension {} is given to tag {} here and to tag {} at {}",
                        p.name, p.dim, p.tag, name_it->second.first, s_.where(name_it->second.second)));
      names_.push_back(std::move(p));
    }
    s_.expect_word("$EndPhysicalNames");
  }

  // -- numbers in the file's encoding (4.1 binary: int = 4 bytes, size_t = 8 bytes)

  int int4(std::string_view what) { return s_.binary() ? s_.bin<std::int32_t>(what) : s_.integer<int>(what); }
  std::uint64_t size8(std::string_view what) {
    return s_.binary() ? s_.bin<std::uint64_t>(what) : s_.integer<std::uint64_t>(what);
  }
  double real8(std::string_view what) { return s_.binary() ? s_.bin<double>(what) : s_.real(what); }
  /// A count of items that take at least `ascii` (text) or `bin` (binary) bytes each.
  std::uint64_t count(std::string_view what, std::size_t ascii, std::size_t bin) {
    const char* at = s_.pos();
    const auto n = size8(what);
    s_.check_count(n, s_.binary() ? bin : ascii, what, at);
    return n;
  }

  void read_entities(bool partitioned) {
    if (!v4_) {
      skip_section(partitioned ? "$PartitionedEntities" : "$Entities", s_.pos());
      return;
    }
    if (s_.binary()) end_header_line();
    if (partitioned) {
      count("number of partitions", 1, 1);
      const auto ghosts = count("number of ghost entities", 4, 8);
      for (std::uint64_t g = 0; g < ghosts; ++g) {
        ghost_tags_.push_back(int4("ghost entity tag"));
        int4("ghost entity partition");
      }
    }
    std::array<std::uint64_t, 4> n{};
    for (int d = 0; d < 4; ++d) n[d] = count("number of entities", 10, 36);
    for (int d = 0; d < 4; ++d)
      for (std::uint64_t e = 0; e < n[d]; ++e) {
        const int tag = int4("entity tag");
        int parent_dim = d;
        if (partitioned) {
          parent_dim = int4("parent dimension");
          int4("parent tag");
          const auto np = count("number of partitions of the entity", 2, 4);
          for (std::uint64_t k = 0; k < np; ++k) int4("partition tag");
        }
        for (int k = 0; k < (d == 0 ? 3 : 6); ++k) real8(d == 0 ? "point coordinate" : "entity bounding box");
        const auto nphys = count("number of physical tags", 2, 4);
        std::vector<int> phys(nphys);
        for (auto& p : phys) p = int4("physical tag");
        std::vector<int> sorted = phys;  // a group listed twice is one group (keep file order)
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
          std::set<int> seen;
          std::erase_if(phys, [&](int p) { return !seen.insert(p).second; });
        }
        // A partition boundary (a piece of a higher-dimensional entity) lists its parent's
        // physical groups, which are not groups of its own dimension: not tagged facets.
        if (parent_dim != d) phys.clear();
        entity_physicals_[{d, tag}] = std::move(phys);
        if (d > 0) {
          const auto nb = count("number of bounding entities", 2, 4);
          for (std::uint64_t k = 0; k < nb; ++k) int4("bounding entity tag");
        }
      }
    std::sort(ghost_tags_.begin(), ghost_tags_.end());
    s_.expect_word(partitioned ? "$EndPartitionedEntities" : "$EndEntities");
  }

  void check_node_total(std::uint64_t n, const char* at) {
    if (n > kMaxIndex) s_.fail_at(at, fmt::format("{} nodes are too many for 32-bit indices", n));
  }

  /// Append x, y, z found at `at` (the first coordinate's position).
  void store_coordinates(const char* at, const double* xyz) {
    for (int k = 0; k < 3; ++k)
      if (!std::isfinite(xyz[k]))
        s_.fail_at(
            s_.binary() ? at + 8 * k : at,
            fmt::format("expected finite coordinates, found {} in node {}", xyz[k], xyz_.size() / 3 + 1));
    xyz_.insert(xyz_.end(), xyz, xyz + 3);
  }

  void read_nodes2() {
    const char* at = s_.pos();
    const auto n = s_.integer<std::uint64_t>("number of nodes");
    s_.check_count(n, s_.binary() ? 28 : 8, "number of nodes", at);
    check_node_total(n, at);
    std::vector<std::uint64_t> tags;
    tags.reserve(n);
    xyz_.reserve(3 * n);
    if (s_.binary()) {
      end_header_line();
      tag_runs_.push_back({s_.pos(), 0, 4 + 3 * 8});
      for (std::uint64_t i = 0; i < n; ++i) {
        const char* p = s_.pos();
        const auto tag = s_.bin<std::int32_t>("node tag");
        if (tag < 0) s_.fail_at(p, fmt::format("expected a positive node tag, found {}", tag));
        tags.push_back(static_cast<std::uint64_t>(tag));
        double c[3];
        p = s_.pos();
        s_.bin_array(c, 3, "node coordinate");
        store_coordinates(p, c);
      }
    } else {
      tag_runs_.push_back({s_.pos(), 0, 4});  // tag x y z
      for (std::uint64_t i = 0; i < n; ++i) {
        tags.push_back(s_.integer<std::uint64_t>("node tag"));
        double c[3];
        s_.skip_space();
        const char* p = s_.pos();
        for (auto& x : c) x = s_.real("node coordinate");
        store_coordinates(p, c);
      }
    }
    s_.expect_word("$EndNodes");
    index_nodes(tags);
    have_nodes_ = true;
  }

  void read_nodes4() {
    if (s_.binary()) end_header_line();
    const char* at = s_.pos();
    const auto blocks = count("number of node blocks", 8, 20);
    const char* total_at = s_.pos();
    const auto total = count("number of nodes", 8, 32);
    check_node_total(total, total_at);
    size8("minimum node tag");
    size8("maximum node tag");
    std::vector<std::uint64_t> tags;
    tags.reserve(total);
    xyz_.reserve(3 * total);
    for (std::uint64_t b = 0; b < blocks; ++b) {
      const char* block_at = s_.pos();
      const int dim = int4("entity dimension");
      int4("entity tag");
      const int parametric = int4("parametric flag");
      if (dim < 0 || dim > 3)
        s_.fail_at(block_at, fmt::format("expected entity dimension 0..3, found {}", dim));
      if (parametric != 0 && parametric != 1)
        s_.fail_at(block_at, fmt::format("expected parametric flag 0 or 1, found {}", parametric));
      const char* nb_at = s_.pos();
      const auto nb = count("number of nodes in the block", 8, 32);
      if (nb > total - tags.size())
        s_.fail_at(nb_at, fmt::format("node block of {} nodes exceeds the header's total of {}", nb, total));
      const int extra = parametric ? dim : 0;
      if (nb > 0) tag_runs_.push_back({s_.pos(), tags.size(), s_.binary() ? std::size_t{8} : std::size_t{1}});
      if (s_.binary()) {
        const std::size_t first = tags.size();
        tags.resize(first + nb);
        s_.bin_array(tags.data() + first, nb, "node tag");
        const char* coord_at = s_.pos();
        const std::size_t per = static_cast<std::size_t>(3 + extra);
        if (nb > s_.remaining() / (8 * per))
          s_.fail(fmt::format("expected coordinates of {} nodes ({} bytes), but only {} bytes remain", nb,
                              nb * per * 8, s_.remaining()));
        if (extra == 0) {
          const std::size_t first_coord = xyz_.size();
          xyz_.resize(first_coord + 3 * nb);
          s_.bin_array(xyz_.data() + first_coord, 3 * nb, "node coordinate");
          for (std::size_t k = first_coord; k < xyz_.size(); ++k)
            if (!std::isfinite(xyz_[k]))
              s_.fail_at(coord_at + 8 * (k - first_coord),
                         fmt::format("expected finite coordinates, found {} in node {}", xyz_[k], k / 3 + 1));
        } else {
          double c[6];
          for (std::uint64_t i = 0; i < nb; ++i) {
            const char* p = s_.pos();
            s_.bin_array(c, per, "node coordinate");
            store_coordinates(p, c);
          }
        }
      } else {
        for (std::uint64_t i = 0; i < nb; ++i) tags.push_back(s_.integer<std::uint64_t>("node tag"));
        for (std::uint64_t i = 0; i < nb; ++i) {
          double c[3];
          s_.skip_space();
          const char* p = s_.pos();
          for (auto& x : c) x = s_.real("node coordinate");
          for (int k = 0; k < extra; ++k) s_.real("parametric coordinate");
          store_coordinates(p, c);
        }
      }
    }
    if (tags.size() != total)
      s_.fail_at(at,
                 fmt::format("the header announces {} nodes, but its blocks hold {}", total, tags.size()));
    s_.expect_word("$EndNodes");
    index_nodes(tags);
    have_nodes_ = true;
  }

  void index_nodes(const std::vector<std::uint64_t>& tags) {
    const auto repeat = index_.build(tags);
    if (!repeat) return;
    const char* first = node_tag_at(repeat->first);
    s_.fail_at(node_tag_at(repeat->again), fmt::format("node tag {} is given twice (the first time at {})",
                                                       tags[repeat->again], s_.where(first)));
  }

  /// Where the i-th node tag of $Nodes is (error path only: re-scans ASCII tokens).
  const char* node_tag_at(std::size_t i) {
    const auto it = std::upper_bound(tag_runs_.begin(), tag_runs_.end(), i,
                                     [](std::size_t j, const TagRun& r) { return j < r.first; });
    const TagRun& r = *std::prev(it);  // the first run starts at node 0
    const std::size_t k = i - r.first;
    if (s_.binary()) return r.at + k * r.stride;
    s_.seek(r.at);
    for (std::size_t t = 0; t < k * r.stride; ++t) s_.token();
    s_.skip_space();
    return s_.pos();
  }

  CellType element_type(int gmsh_type, const char* at) {
    const auto t = cell_type_from_gmsh(gmsh_type);
    if (!t)
      s_.fail_at(at, fmt::format("unknown or unsupported element type {} (expected one of {})", gmsh_type,
                                 supported_types()));
    return *t;
  }

  index_t node_index(std::uint64_t tag, const char* at) {
    const index_t i = index_.find(tag);
    if (i < 0) s_.fail_at(at, fmt::format("element references node {}, which is not in $Nodes", tag));
    return i;
  }

  /// Add one element of `b` whose node indices are in `nodes` with the physical tags `phys`
  /// (at least one entry, 0 for none); `element_tag` identifies MSH2 repeats.
  void add_element(Bucket& b, std::span<const index_t> nodes, std::span<const int> phys) {
    if (phys.size() > 1) b.may_repeat = true;
    for (std::size_t k = 0; k < phys.size(); ++k) {
      b.nodes.insert(b.nodes.end(), nodes.begin(), nodes.end());
      b.tags.push_back(phys[k]);
    }
  }

  void read_elements2() {
    const char* at = s_.pos();
    const auto n = s_.integer<std::uint64_t>("number of elements");
    s_.check_count(n, s_.binary() ? 12 : 8, "number of elements", at);
    if (n > kMaxIndex) s_.fail_at(at, fmt::format("{} elements are too many for 32-bit indices", n));
    std::array<index_t, 32> nodes{};
    std::uint64_t done = 0;
    if (s_.binary()) {
      end_header_line();
      while (done < n) {
        const char* h = s_.pos();
        const auto gtype = s_.bin<std::int32_t>("element type");
        const auto nb = s_.bin<std::int32_t>("number of elements in the block");
        const auto ntags = s_.bin<std::int32_t>("number of element tags");
        const CellType type = element_type(gtype, h);
        if (nb < 0 || static_cast<std::uint64_t>(nb) > n - done)
          s_.fail_at(h + 4,
                     fmt::format("element block of {} elements exceeds the header's total of {}", nb, n));
        if (ntags < 0 || ntags > 1000)
          s_.fail_at(h + 8, fmt::format("expected 0..1000 element tags, found {}", ntags));
        const int k = cell_info(type).num_nodes;
        const std::size_t per = 4 * static_cast<std::size_t>(1 + ntags + k);
        s_.check_count(static_cast<std::uint64_t>(nb), per, "number of elements in the block", h + 4);
        Bucket& b = bucket(type, h);
        grow(b, static_cast<std::size_t>(nb), k);
        for (std::int32_t e = 0; e < nb; ++e) {
          s_.bin<std::int32_t>("element number");
          int phys = 0, entity = 0;
          for (int t = 0; t < ntags; ++t) {
            const auto v = s_.bin<std::int32_t>("element tag");
            if (t == 0) phys = v;
            if (t == 1) entity = v;
          }
          for (int j = 0; j < k; ++j) {
            const char* p = s_.pos();
            const auto tag = s_.bin<std::int32_t>("element node");
            nodes[j] = node_index(static_cast<std::uint64_t>(static_cast<std::uint32_t>(tag)), p);
          }
          add_element2(b, std::span<const index_t>(nodes.data(), k), phys, entity);
        }
        done += static_cast<std::uint64_t>(nb);
      }
    } else {
      for (; done < n; ++done) {
        s_.integer<std::uint64_t>("element number");
        s_.skip_space();
        const char* tp = s_.pos();
        const CellType type = element_type(s_.integer<int>("element type"), tp);
        const char* nt_at = s_.pos();
        const int ntags = s_.integer<int>("number of element tags");
        if (ntags < 0 || ntags > 1000)
          s_.fail_at(nt_at, fmt::format("expected 0..1000 element tags, found {}", ntags));
        int phys = 0, entity = 0;
        for (int t = 0; t < ntags; ++t) {
          const int v = s_.integer<int>("element tag");
          if (t == 0) phys = v;
          if (t == 1) entity = v;
        }
        const int k = cell_info(type).num_nodes;
        for (int j = 0; j < k; ++j) {
          s_.skip_space();
          const char* p = s_.pos();
          nodes[j] = node_index(s_.integer<std::uint64_t>("element node"), p);
        }
        add_element2(bucket(type, tp), std::span<const index_t>(nodes.data(), k), phys, entity);
      }
    }
    s_.expect_word("$EndElements");
    have_elements_ = true;
  }

  // MSH2 writes an element once per physical group it belongs to: an elementary entity that
  // comes with a second group has copies (the entity's elements come in runs: the map is read
  // once per run).
  void add_element2(Bucket& b, std::span<const index_t> nodes, int phys, int entity) {
    if (b.rows() == 0 || entity != b.last_entity || phys != b.last_group) {
      const auto [it, added] = b.entity_group.emplace(entity, phys);
      if (!added && it->second != phys) b.may_repeat = true;
      b.last_entity = entity;
      b.last_group = phys;
    }
    b.nodes.insert(b.nodes.end(), nodes.begin(), nodes.end());
    b.tags.push_back(phys);
  }

  void read_elements4() {
    if (s_.binary()) end_header_line();
    const char* at = s_.pos();
    const auto blocks = count("number of element blocks", 8, 20);
    const char* total_at = s_.pos();
    const auto total = count("number of elements", 4, 16);
    if (total > kMaxIndex)
      s_.fail_at(total_at, fmt::format("{} elements are too many for 32-bit indices", total));
    size8("minimum element tag");
    size8("maximum element tag");
    std::array<index_t, 32> nodes{};
    static const std::vector<int> no_physicals{0};
    std::uint64_t done = 0;
    for (std::uint64_t bl = 0; bl < blocks; ++bl) {
      const char* h = s_.pos();
      const int dim = int4("entity dimension");
      const int entity = int4("entity tag");
      if (!s_.binary()) s_.skip_space();
      const char* tp = s_.pos();
      const CellType type = element_type(int4("element type"), tp);
      if (dim != cell_info(type).dim)
        s_.fail_at(h, fmt::format("expected entity dimension {} for {} elements, found {}",
                                  cell_info(type).dim, cell_info(type).name, dim));
      const int k = cell_info(type).num_nodes;
      const char* nb_at = s_.pos();
      const auto nb = count("number of elements in the block", 2 * (k + 1), 8 * (k + 1));
      if (nb > total - done)
        s_.fail_at(nb_at,
                   fmt::format("element block of {} elements exceeds the header's total of {}", nb, total));
      const bool ghost = std::binary_search(ghost_tags_.begin(), ghost_tags_.end(), entity);
      const auto it = entity_physicals_.find({dim, entity});
      const std::vector<int>& phys =
          (it == entity_physicals_.end() || it->second.empty()) ? no_physicals : it->second;
      // An element in several physical groups is stored once per group: bound the product so
      // that a small file cannot claim (elements × groups) beyond what real files hold.
      rows_ += nb * phys.size();
      if (rows_ > static_cast<std::uint64_t>(s_.end() - s_.begin()) / 2 + 1024)
        s_.fail_at(
            h, fmt::format("{} elements in {} physical groups each are more than this file can describe", nb,
                           phys.size()));
      Bucket* b = ghost ? nullptr : &bucket(type, h);
      if (b) grow(*b, nb, k);
      if (s_.binary()) {
        // checked above: the whole block fits
        for (std::uint64_t e = 0; e < nb; ++e) {
          s_.bin<std::uint64_t>("element tag");
          for (int j = 0; j < k; ++j) {
            const char* p = s_.pos();
            nodes[j] = node_index(s_.bin<std::uint64_t>("element node"), p);
          }
          if (b) add_element(*b, std::span<const index_t>(nodes.data(), k), phys);
        }
      } else {
        for (std::uint64_t e = 0; e < nb; ++e) {
          s_.integer<std::uint64_t>("element tag");
          for (int j = 0; j < k; ++j) {
            s_.skip_space();
            const char* p = s_.pos();
            nodes[j] = node_index(s_.integer<std::uint64_t>("element node"), p);
          }
          if (b) add_element(*b, std::span<const index_t>(nodes.data(), k), phys);
        }
      }
      done += nb;
    }
    if (done != total)
      s_.fail_at(at, fmt::format("the header announces {} elements, but its blocks hold {}", total, done));
    s_.expect_word("$EndElements");
    have_elements_ = true;
  }

  // Room for nb more elements (sizes checked against the file by the caller); geometric growth,
  // since a file may hold many small blocks of one type.
  static void grow(Bucket& b, std::size_t nb, int k) {
    const std::size_t rows = b.rows() + nb;
    if (rows > b.tags.capacity()) {
      const std::size_t cap = std::max(rows, 2 * b.tags.capacity());
      b.tags.reserve(cap);
      b.nodes.reserve(cap * static_cast<std::size_t>(k));
    }
  }

  Bucket& bucket(CellType t, const char* at) {
    Bucket& b = buckets_[static_cast<std::size_t>(t)];
    if (!b.first) b.first = at;
    return b;
  }

  // ---- the mesh -----------------------------------------------------------------------------

  Mesh finish() {
    if (!have_nodes_) s_.fail("expected a '$Nodes' section, found end of file");
    if (!have_elements_) s_.fail("expected an '$Elements' section, found end of file");
    int tdim = -1;
    std::optional<CellType> cell;
    for (std::size_t t = 0; t < kNumTypes; ++t) {
      if (buckets_[t].rows() == 0) continue;
      const auto type = static_cast<CellType>(t);
      const int d = cell_info(type).dim;
      if (d > tdim) {
        tdim = d;
        cell = type;
      } else if (d == tdim) {
        const Bucket& other = buckets_[static_cast<std::size_t>(*cell)];
        const Bucket& b = buckets_[t];
        s_.fail_at(std::max(other.first, b.first), fmt::format("mixed cell types {} and {} are not supported",
                                                               cell_info(*cell).name, cell_info(type).name));
      }
    }
    if (!cell) s_.fail("expected at least one element, found none");

    Mesh::Data d;
    d.cell_type = *cell;
    d.source = s_.name();
    Bucket& cb = buckets_[static_cast<std::size_t>(*cell)];
    const int npc = cell_info(*cell).num_nodes;
    if (cb.may_repeat) merge_copies(cb, npc, tdim, d.tag_sets);
    d.cells = std::move(cb.nodes);
    d.cell_tags = std::move(cb.tags);
    if (tdim >= 1) {
      const CellType ft = cell_info(*cell).facet;
      Bucket& fb = buckets_[static_cast<std::size_t>(ft)];
      const int npf = cell_info(ft).num_nodes;
      if (fb.may_repeat) merge_copies(fb, npf, tdim - 1, d.tag_sets);
      for (std::size_t row = 0; row < fb.rows(); ++row)
        if (fb.tags[row] != 0) {
          d.facets.insert(d.facets.end(), fb.nodes.begin() + row * npf, fb.nodes.begin() + (row + 1) * npf);
          d.facet_tags.push_back(fb.tags[row]);
        }
    }

    // Gmsh always stores x, y, z: the coordinate dimension is the smallest that keeps every
    // nonzero coordinate, and at least the cells' dimension.
    const std::size_t nn = xyz_.size() / 3;
    int gdim = std::max(tdim, 1);
    for (std::size_t i = 0; i < nn && gdim < 3; ++i) {
      if (xyz_[3 * i + 2] != 0.0)
        gdim = 3;
      else if (xyz_[3 * i + 1] != 0.0)
        gdim = std::max(gdim, 2);
    }
    d.gdim = gdim;
    if (gdim == 3) {
      d.coords = std::move(xyz_);
    } else {
      d.coords.resize(nn * gdim);
      for (std::size_t i = 0; i < nn; ++i)
        for (int k = 0; k < gdim; ++k) d.coords[i * gdim + k] = xyz_[3 * i + k];
    }
    d.names = std::move(names_);
    try {
      return Mesh(std::move(d));
    } catch (const InvalidArgument& e) {  // everything is checked above; a safety net
      throw ParseError(s_.name(), ParseError::Position::none, 0, e.what());
    }
  }

  Scanner s_;
  bool v4_ = false;
  bool have_nodes_ = false, have_elements_ = false;
  std::vector<PhysicalName> names_;
  // where each (dimension, tag) was named, and the (tag, place) of each (dimension, name)
  std::map<std::pair<int, int>, const char*> name_at_;
  std::map<std::pair<int, std::string>, std::pair<int, const char*>> tag_of_name_;
  // where the node tags were read: the first node of each run, and tokens (ASCII) or bytes
  // (binary) from one tag to the next; only used to place an error
  struct TagRun {
    const char* at;
    std::size_t first;
    std::size_t stride;
  };
  std::vector<TagRun> tag_runs_;
  std::map<std::pair<int, int>, std::vector<int>> entity_physicals_;
  std::vector<int> ghost_tags_;  // sorted
  std::uint64_t rows_ = 0;
  std::vector<double> xyz_;
  NodeIndex index_;
  std::array<Bucket, kNumTypes> buckets_;
};

}  // namespace

Mesh read_gmsh(std::string_view bytes, std::string_view name) { return GmshReader(bytes, name).read(); }

}  // namespace fem::mesh
