//! sn-trace-merge DIR: joins the timeline parts the ranks of a job wrote into DIR
//! (SOFTNIC_TRACE=DIR) into DIR/softnic-trace.json, for jobs launched by mpiexec or srun
//! (snrun does it itself at the end of a job).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir] = args.as_slice() else {
        eprintln!("usage: sn-trace-merge DIR   (the SOFTNIC_TRACE directory of a finished job)");
        std::process::exit(2);
    };
    match softnic_fabric::trace::merge(std::path::Path::new(dir)) {
        Ok(Some((path, tracks))) => println!("{}: {tracks} rank(s)", path.display()),
        Ok(None) => {
            eprintln!("sn-trace-merge: no timeline parts (softnic-trace-*.part) in {dir}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("sn-trace-merge: {dir}: {e}");
            std::process::exit(1);
        }
    }
}
