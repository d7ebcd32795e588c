// A token stream whose tokens open the inspector: the stream (built first, so its listeners come
// first) hands each hover, focus and press to an InspectorController made for the same container.

import { InspectorController } from "./inspector.js";
import { TokenStream } from "./stream.js";

/** @param output  the token container; @param inspector  an Inspector;
 *  @param getToken  index → that token's event or null
 *  @returns {{stream: TokenStream, controller: InspectorController}} */
export function inspectedStream(output, inspector, getToken) {
  let controller = null;
  const stream = new TokenStream(output, {
    enter: (...a) => controller.handlers.enter(...a),
    leave: (...a) => controller.handlers.leave(...a),
    focus: (...a) => controller.handlers.focus(...a),
    blur: (...a) => controller.handlers.blur(...a),
    activate: (...a) => controller.handlers.activate(...a),
    escape: (...a) => controller.handlers.escape(...a),
  });
  controller = new InspectorController(inspector, output, getToken);
  return { stream, controller };
}
