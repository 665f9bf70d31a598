fn main() { eprintln!("snrun: not built yet"); std::process::exit(1) }
