//! The `execvp` search of `envpolicy::search` (unit-tested in the core) names its
//! errno values itself, the core having no dependencies: they must be the C
//! library's.

#[test]
fn the_search_errnos_are_the_c_librarys() {
    use envpolicy::search::errno as e;
    let pairs = [
        (e::ENOENT, libc::ENOENT),
        (e::ENOEXEC, libc::ENOEXEC),
        (e::EACCES, libc::EACCES),
        (e::EFAULT, libc::EFAULT),
        (e::ENODEV, libc::ENODEV),
        (e::ENOTDIR, libc::ENOTDIR),
        (e::ENAMETOOLONG, libc::ENAMETOOLONG),
        (e::ETIMEDOUT, libc::ETIMEDOUT),
        (e::ESTALE, libc::ESTALE),
    ];
    for (ours, libc_value) in pairs {
        assert_eq!(ours, libc_value);
    }
    assert_eq!(envpolicy::search::PATH_MAX, libc::PATH_MAX as usize);
}
