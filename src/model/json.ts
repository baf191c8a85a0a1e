/**
 * JSON as a type: what a message's blocks and attachments, an app's views and the other free-form parts
 * of a request hold. The schema at the edge checks their outer shape (an array of objects); what is
 * inside is the apps' to say, and is JSON because it arrived as JSON.
 */
export type Json = string | number | boolean | null | Json[] | JsonObject;

/** A JSON object: a block, an attachment, a view. */
export interface JsonObject {
  [key: string]: Json;
}
