package skewbench.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process per permission change.
 *
 * <p>Without Hadoop's native library (no Debian package or PyPI wheel ships it), {@code
 * RawLocalFileSystem.setPermission} runs {@code chmod} in a new process, and every file or folder it
 * creates sets its permission: one fork per state-store delta file and per checkpoint file, hundreds
 * per micro-batch at W = 100. This class sets the same POSIX bits through {@code java.nio}. It is
 * a {@code RawLocalFileSystem}, so it also writes no {@code .crc} files beside the data.
 *
 * <p>Used as {@code fs.file.impl} by skewbench's {@code no-fork} lever (bench/spark/engine.py).
 */
public class NioLocalFileSystem extends RawLocalFileSystem {

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    Files.setPosixFilePermissions(pathToFile(path).toPath(), posix(permission));
  }

  private static Set<PosixFilePermission> posix(FsPermission permission) {
    Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
    add(bits, permission.getUserAction(), PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_EXECUTE);
    add(bits, permission.getGroupAction(), PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
        PosixFilePermission.GROUP_EXECUTE);
    add(bits, permission.getOtherAction(), PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_EXECUTE);
    return bits;
  }

  private static void add(Set<PosixFilePermission> bits, FsAction action, PosixFilePermission read,
                          PosixFilePermission write, PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) bits.add(read);
    if (action.implies(FsAction.WRITE)) bits.add(write);
    if (action.implies(FsAction.EXECUTE)) bits.add(execute);
  }
}
