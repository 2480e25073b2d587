// Iterators: the ranges of comprehensions and reductions, the projected work of loop nests, and
// the comprehensions and reductions themselves.
#include "compiler/flatten/Flattener.h"

namespace mbs::flattening {

// ------------------------------------------------------------------------------------------------
// Elaboration

// The values of the iterators of a comprehension or a reduction, each a vector known at compile
// time (its parameters become compile-time), evaluated in the scope that encloses the expression.
std::vector<Value> Flattener::iterator_ranges(const ast::Expr& e, Scope s) {
  std::vector<Value> ranges;
  for (const auto& ix : e.iterators) {
    if (Instance* hidden = s.inst ? s.inst->member(ix.name) : nullptr) {
      diags_.report(DiagKind::iterator_shadows, ix.span, {ix.name});
      if (hidden->span.valid())
        diags_.note(hidden->span, fmt::format("'{}' is declared here", ix.name));
      diags_.help("rename the iterator");
      throw BuildError{};
    }
    if (!ix.range) fail(DiagKind::unsupported, ix.span, {"an iterator without a range"});
    Value r = eval(*ix.range, s);
    if (r.is_string || r.shape.size() != 1)
      fail(DiagKind::shape_mismatch, ix.range->span,
           {fmt::format("the range of iterator '{}' must be a vector, found {}", ix.name,
                        r.is_string ? std::string("a string") : shape_str(r.shape))});
    for (Expr& x : r.elems)
      x = cx_.num(structural(x, ix.range->span, "the range of iterator '" + ix.name + "'"));
    ranges.push_back(std::move(r));
  }
  return ranges;
}

void Flattener::check_projected_work(double count, Span span, const char* what) {
  const double limit = 10.0 * static_cast<double>(options_.max_instances);
  const double projected = static_cast<double>(iterations_) + count * pending_iterations_;
  if (projected > limit)
    fail(DiagKind::unsupported, span,
         {fmt::format("{} more than {} times in one model (this loop of {} iterations, within "
                      "loops of {} more, would make it {:.3g})",
                      what, 10 * options_.max_instances, count, pending_iterations_, projected)});
}

// Evaluates the body of `e` once for every combination of its iterators' values. Modelica
// expands `{b for i in A, j in B}` to `{{b for i in A} for j in B}`: the last iterator is the
// outermost loop, so the first one varies fastest. Returns the sizes of the ranges in that
// order (the last iterator's first): the leading dimensions of a comprehension.
std::vector<int> Flattener::iterate(const ast::Expr& e, Scope s,
                                    const std::function<void(const Value&)>& each) {
  if (e.filter && e.kind == ast::ExprKind::Comprehension && e.iterators.size() > 1) {
    // the rows would have different lengths
    diags_.report(DiagKind::unsupported, e.filter->span,
                  {"a filter in an array comprehension with several iterators"});
    diags_.help("nest the comprehensions: {{e for i in A if c} for j in B}");
    throw BuildError{};
  }
  std::vector<Value> ranges = iterator_ranges(e, s);
  double count = 1.0;
  for (const Value& r : ranges) count *= static_cast<double>(r.size());
  check_projected_work(count, e.span, "evaluating comprehensions and reductions");
  const double outer_pending = pending_iterations_;
  double done = 0.0;
  std::function<void(size_t, const Iterators*)> loop = [&](size_t k, const Iterators* outer) {
    if (k == 0) {
      pending_iterations_ = outer_pending * (count - done);  // this one and those still to come
      done += 1.0;
      // nested comprehensions and reductions multiply their ranges: bound the total work
      if (++iterations_ > 10 * options_.max_instances)
        fail(
            DiagKind::unsupported, e.span,
            {fmt::format("evaluating comprehensions and reductions more than {} times in one model",
                         10 * options_.max_instances)});
      if (e.filter) {
        Value c = eval(*e.filter, s.with(outer));
        if (structural(scalar_of(c, e.filter->span, "a filter"), e.filter->span,
                       "the filter of an iterator") == 0.0)
          return;
      }
      each(eval(*e.args[0], s.with(outer)));
      return;
    }
    const Value& range = ranges[k - 1];
    for (Expr x : range.elems) {
      Iterators it{outer, e.iterators[k - 1].name, Value::of(x, range.type)};
      it.value.enumeration = range.enumeration;  // `for e in E`
      loop(k - 1, &it);
    }
  };
  {
    const PendingGuard restore{pending_iterations_};
    loop(ranges.size(), s.iters);
  }
  std::vector<int> sizes;
  for (size_t k = ranges.size(); k-- > 0;) sizes.push_back(static_cast<int>(ranges[k].size()));
  return sizes;
}

Value Flattener::eval_comprehension(const ast::Expr& e, Scope s) {
  Value r;
  r.type = ScalarType::Integer;
  std::vector<int> inner;
  size_t count = 0;
  std::vector<int> sizes = iterate(e, s, [&](const Value& v) {
    if (v.is_string)
      fail(DiagKind::type_error, e.args[0]->span, {"arrays of strings are not supported"});
    if (count == 0) {
      inner = v.shape;
      if (v.type == ScalarType::Boolean) r.type = ScalarType::Boolean;
    } else if (v.shape != inner) {
      fail(DiagKind::shape_mismatch, e.args[0]->span,
           {fmt::format("the elements of the comprehension have different shapes {} and {}",
                        shape_str(inner), shape_str(v.shape))});
    }
    if (v.type == ScalarType::Real) r.type = ScalarType::Real;
    check_elements(static_cast<double>(r.elems.size() + v.size()), e.span);
    r.elems.insert(r.elems.end(), v.elems.begin(), v.elems.end());
    ++count;
  });
  r.shape = e.filter ? std::vector<int>{static_cast<int>(count)} : std::move(sizes);
  r.shape.insert(r.shape.end(), inner.begin(), inner.end());
  return r;
}

// sum, product, min or max of a scalar body over every combination of the iterators' values.
Value Flattener::eval_reduction(const ast::Expr& e, Scope s) {
  std::string name;
  for (size_t i = 0; i < e.ref.size(); ++i) name += (i ? "." : "") + e.ref[i].name;
  if (name != "sum" && name != "product" && name != "min" && name != "max") {
    diags_.report(DiagKind::unsupported, e.span, {"the reduction '" + name + "(... for ...)'"});
    diags_.help("the reductions over iterators are sum, product, min and max");
    throw BuildError{};
  }
  std::vector<Expr> terms;
  ScalarType type = ScalarType::Integer;
  iterate(e, s, [&](const Value& v) {
    if (!v.scalar())
      fail(DiagKind::reduction_not_scalar, e.args[0]->span,
           {name, v.is_string ? std::string("a string") : "shape " + shape_str(v.shape)});
    if (v.type != ScalarType::Integer) type = ScalarType::Real;
    terms.push_back(v.elems[0]);
  });
  if (name == "sum")
    return Value::of(terms.empty() ? cx_.num(0.0) : cx_.add(std::span<const Expr>(terms)), type);
  if (name == "product")
    return Value::of(terms.empty() ? cx_.num(1.0) : cx_.mul(std::span<const Expr>(terms)), type);
  if (terms.empty()) {
    diags_.report(DiagKind::empty_reduction, e.span, {name});
    diags_.help("'" + name +
                "' needs at least one value (a sum of nothing is 0, a product of nothing is 1)");
    throw BuildError{};
  }
  sym::Op op = name == "min" ? sym::Op::Min : sym::Op::Max;
  Expr r = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) r = cx_.binary(op, r, terms[i]);
  return Value::of(r, type);
}

}  // namespace mbs::flattening
