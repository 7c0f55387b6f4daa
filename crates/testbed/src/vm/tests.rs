//! Unit tests of `vm`, beside it so that they may use its private items.

use super::*;

#[test]
fn a_working_directory_the_guest_hides_is_shared() {
    let p = |s: &str| PathBuf::from(s);
    // A checkout under mktemp -d, run from one of its crates: hidden by
    // the guest's fresh /tmp; its top directory there is shared.
    assert_eq!(
        shares_for(&[], &p("/tmp/tmp.x/repo/crates/testbed")),
        [p("/tmp/tmp.x")]
    );
    assert_eq!(shares_for(&[], &p("/var/tmp/repo")), [p("/var/tmp/repo")]);
    // Visible through the overlay: nothing added.
    assert!(shares_for(&[], &p("/work/repo")).is_empty());
    assert!(
        shares_for(&[], &p("/tmpfoo/repo")).is_empty(),
        "a prefix of a name is not a parent"
    );
    assert!(
        shares_for(&[], &p("/tmp")).is_empty(),
        "never the whole /tmp"
    );
    // Already shared by the caller, itself or a parent: not twice.
    assert_eq!(shares_for(&[p("/tmp/a")], &p("/tmp/a/repo")), [p("/tmp/a")]);
}

#[test]
fn image_dependency_is_the_versioned_package() {
    let text = "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n  Depends: foo\n";
    assert_eq!(
        parse_image_dependency(text).as_deref(),
        Some("linux-image-6.1.0-57-amd64")
    );
    assert_eq!(parse_image_dependency("linux-image-amd64\n"), None);
}

#[test]
fn module_closure_includes_dependencies() {
    let dep = "kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko\n\
                   kernel/fs/overlayfs/overlay.ko:\n";
    let files = module_closure(dep, &["9p", "overlay"]).unwrap();
    assert_eq!(
        files,
        [
            "kernel/fs/9p/9p.ko",
            "kernel/net/9p/9pnet.ko",
            "kernel/fs/netfs/netfs.ko",
            "kernel/fs/overlayfs/overlay.ko"
        ]
    );
    let err = module_closure(dep, &["vrf"]).unwrap_err().to_string();
    assert!(err.contains("vrf"), "{err}");
}

#[test]
fn command_arguments_survive_sh_quoting() {
    let env = [
        ("A_B".to_string(), "it's".to_string()),
        ("PWD".into(), "/x".into()),
    ];
    let s = command_script(
        &["echo", "a b", "c'd", "$HOME"],
        Path::new("/w d"),
        env.into_iter(),
    );
    assert!(s.contains("export A_B='it'\\''s'\n"), "{s}");
    assert!(!s.contains("PWD"), "{s}");
    assert!(s.contains("cd '/w d' ||"), "{s}");
    assert!(s.ends_with("exec 'echo' 'a b' 'c'\\''d' '$HOME'\n"), "{s}");
    // and sh agrees
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("set -- {}; printf '%s|' \"$@\"", {
            let words: Vec<String> = ["a b", "c'd", "$HOME"]
                .iter()
                .map(|a| sh_quote(a))
                .collect();
            words.join(" ")
        }))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a b|c'd|$HOME|");
}

#[test]
fn cpio_entries_are_newc_and_aligned() {
    let mut c = Cpio::default();
    c.dir_all("a/b");
    c.file("a/b/f", 0o644, b"hello");
    c.char_device("dev/console", 5, 1);
    let out = c.finish();
    assert_eq!(out.len() & 3, 0, "padded to 4 bytes");
    assert!(out.starts_with(b"070701"));
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.matches("070701").count(), 5);
    assert!(text.contains("a/b/f\0"));
    assert!(text.contains("hello"));
    assert!(text.contains("TRAILER!!!\0"));
    // the file's header: mode 0100644, size 5
    let i = text.find("a/b/f").unwrap() - 110;
    assert_eq!(&text[i + 14..i + 22], "000081a4");
    assert_eq!(&text[i + 54..i + 62], "00000005");
}

#[test]
fn static_busybox_has_no_interpreter() {
    // both binaries exist on every Debian host that can build the VM
    let busybox = fs::read("/usr/bin/busybox").expect("busybox-static installed");
    assert!(
        !elf_has_interpreter(&busybox),
        "/usr/bin/busybox must be static"
    );
    let sh = fs::read("/bin/sh").unwrap();
    assert!(elf_has_interpreter(&sh), "/bin/sh is dynamically linked");
    assert!(!elf_has_interpreter(b"#!/bin/sh\n"));
}

#[test]
fn command_output_is_between_the_markers() {
    let run = VmRun {
        code: 0,
        console: "boot\nobgp-vm: command start\nhi\nthere\nobgp-vm: command exited with status 0\n"
            .into(),
        wall: Duration::ZERO,
        guest_ready: None,
    };
    assert_eq!(run.command_output(), "hi\nthere\n");
}

#[test]
fn plain_tcg_gets_the_thread_model_of_the_cpu_count() {
    assert_eq!(accel_arg("tcg", 2), "tcg,thread=multi");
    assert_eq!(accel_arg("tcg", 1), "tcg,thread=single");
    // an explicit model or another accelerator is the caller's choice
    assert_eq!(accel_arg("tcg,thread=single", 2), "tcg,thread=single");
    assert_eq!(accel_arg("kvm", 2), "kvm");
}
