// fmt is used from its headers only (the GPU machine has no libfmt). With
// FMT_HEADER_ONLY every translation unit compiles and optimizes fmt's whole
// implementation again, which made up about two thirds of the compile time of a
// typical file here. Instead the project builds without FMT_HEADER_ONLY, so the headers
// only declare that implementation, and this one file defines it: format-inl.h holds
// the definitions, and the templates the headers declare FMT_API (extern) are
// instantiated here for the character and floating-point types they are used with.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

}  // namespace detail
FMT_END_NAMESPACE
