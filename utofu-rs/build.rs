// The vendor's soname, so programs linked against us record the same DT_NEEDED
// as when linked against the vendor library.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtofucom.so");
}
