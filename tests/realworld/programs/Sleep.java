// SPDX-License-Identifier: GPL-2.0
/* A JVM that stays up: dlscope check PID reads libjvm.so and its neighbours live. */
public class Sleep {
	public static void main(String[] args) throws Exception {
		System.out.println("ready " + ProcessHandle.current().pid());
		System.out.flush();
		Thread.sleep(120000);
	}
}
